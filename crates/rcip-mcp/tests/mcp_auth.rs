//! The server as an OAuth resource server (MCP "Authorization"), over real
//! sockets on 127.0.0.1 with tokens signed by the test keys in
//! tests/fixtures: the metadata document, every refusal with its status and
//! `WWW-Authenticate`, the token on every request of either era, a legacy
//! session bound to whoever opened it, scopes, key rotation, the host's
//! verifier for opaque tokens, and the refusal to expose a server without
//! authorization.
#![cfg(feature = "http")]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use parking_lot::Mutex;
use rcip::catalog::Catalog;
use rcip::runtime::{Invocation, Runtime, RuntimeBuilder};
use rcip_mcp::http::{
    AuthOptions, HttpOptions, JwksSource, JwtOptions, McpHttpServer, Principal, SessionRequest, TokenCheck,
    TokenRefusal,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

const ISSUER: &str = "https://auth.example.test";
const ES_PEM: &[u8] = include_bytes!("fixtures/test-es256.pem");
const RS_PEM: &[u8] = include_bytes!("fixtures/test-rs256.pem");
const RS_PUB_PEM: &[u8] = include_bytes!("fixtures/test-rs256.pub.pem");

fn catalog() -> Catalog {
    let text = json!({
        "protocolVersion": "1.0",
        "application": {"id": "notes", "name": "Notes", "description": "Notes for tests.", "version": "1.0.0"},
        "scopes": [{"id": "desk", "title": "Desk", "description": "The desk."}],
        "capabilities": [
            {"id": "notes.read", "title": "Read", "description": "Reads.", "scopeIds": ["desk"],
             "effect": "read", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
            {"id": "notes.write", "title": "Write", "description": "Writes.", "scopeIds": ["desk"],
             "effect": "write", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}
        ]
    });
    Catalog::from_bytes(text.to_string().as_bytes()).unwrap()
}

/// A JWK of `pem`'s public key, with `kid`.
fn jwk(pem: &[u8], alg: Algorithm, kid: &str) -> Value {
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(pem).unwrap(),
        _ => EncodingKey::from_rsa_pem(pem).unwrap(),
    };
    let mut jwk = serde_json::to_value(jsonwebtoken::jwk::Jwk::from_encoding_key(&key, alg).unwrap()).unwrap();
    jwk["kid"] = json!(kid);
    jwk
}

fn jwks() -> String {
    json!({"keys": [jwk(ES_PEM, Algorithm::ES256, "es-1"), jwk(RS_PEM, Algorithm::RS256, "rs-1")]}).to_string()
}

fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

/// A token for `claims` over the defaults, signed ES256 with kid `es-1`.
fn token(resource: &str, claims: Value) -> String {
    let mut c = json!({"iss": ISSUER, "aud": resource, "sub": "alice", "exp": now() + 300,
        "scope": "mcp:tools notes:read", "tenant": "acme"});
    for (k, v) in claims.as_object().unwrap() {
        if v.is_null() {
            c.as_object_mut().unwrap().remove(k);
        } else {
            c[k] = v.clone();
        }
    }
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("es-1".into());
    encode(&header, &c, &EncodingKey::from_ec_pem(ES_PEM).unwrap()).unwrap()
}

/// What the factory saw: (subject, tenant claim) per runtime it built.
type Seen = Arc<Mutex<Vec<(String, Value)>>>;

fn auth_options(resource: &str, tokens: TokenCheck) -> AuthOptions {
    AuthOptions {
        resource: resource.into(),
        authorization_servers: vec![ISSUER.into()],
        scopes_supported: vec!["mcp:tools".into(), "notes:read".into(), "notes:write".into()],
        required_scopes: vec!["mcp:tools".into()],
        tool_scopes: BTreeMap::from([("notes.write".to_string(), vec!["notes:write".to_string()])]),
        scope_implies: BTreeMap::new(),
        resource_documentation: None,
        tokens,
    }
}

fn jwt_check(jwks: JwksSource) -> TokenCheck {
    let mut j = JwtOptions::new(jwks);
    j.claims = vec!["tenant".into()];
    TokenCheck::Jwt(j)
}

/// A server on 127.0.0.1 whose resource is its own URL.
fn server(tokens: impl FnOnce(&str) -> TokenCheck, seen: Seen) -> (McpHttpServer, SocketAddr, String) {
    let catalog = catalog();
    // The resource names the port, so bind first to learn it: a listener
    // on port 0 is dropped and its port reused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let options = HttpOptions {
        auth: Some(auth_options(&resource, tokens(&resource))),
        ..HttpOptions::default()
    };
    let c = catalog.clone();
    let factory = move |req: &SessionRequest<'_>| -> Result<Runtime, String> {
        let p = req.principal.expect("an authenticated request");
        seen.lock().push((
            p.subject.clone(),
            p.claims.get("tenant").cloned().unwrap_or(Value::Null),
        ));
        // The policy allows only calls whose runtime principal (given by
        // the server from the token) is the factory's: every answered call
        // below shows the policy saw it.
        let mut b = RuntimeBuilder::new(&c);
        let expected = p.subject.clone();
        b.policy(Arc::new(move |req: rcip::runtime::PolicyRequest| {
            let principal: Value = serde_json::from_str(req.principal_json().unwrap_or("null")).unwrap();
            let decision = if principal["subject"] == json!(expected) && principal["issuer"] == json!(ISSUER) {
                rcip::runtime::Decision::Allow
            } else {
                rcip::runtime::Decision::Deny {
                    reason: Some("not this runtime's principal".into()),
                }
            };
            req.decide(decision).unwrap();
        }));
        let runtime = b.build();
        let host = runtime.host();
        let who = p.subject.clone();
        let read = host
            .bind(
                "notes.read",
                Arc::new(move |inv: Invocation| inv.complete(json!({"for": who})).unwrap()),
                None,
            )
            .unwrap();
        let write = host
            .bind(
                "notes.write",
                Arc::new(|inv: Invocation| inv.complete(json!({"ok": true})).unwrap()),
                None,
            )
            .unwrap();
        std::mem::forget((read, write));
        Ok(runtime)
    };
    let server = McpHttpServer::bind(&catalog, &format!("127.0.0.1:{port}"), options, factory).unwrap();
    server.start().unwrap();
    let addr = server.local_addr();
    (server, addr, resource)
}

/// Shuts the server down off the test's runtime (its own runtime cannot
/// be dropped from inside another's task).
async fn stop(server: McpHttpServer) {
    tokio::task::spawn_blocking(move || server.shutdown(Duration::from_secs(2)))
        .await
        .unwrap();
}

struct Answer {
    status: StatusCode,
    headers: hyper::HeaderMap,
    body: String,
}

impl Answer {
    fn challenge(&self) -> &str {
        self.headers
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap())
            .unwrap_or("")
    }

    fn message(&self) -> Value {
        let data: String = self
            .body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .collect::<Vec<_>>()
            .join("\n");
        serde_json::from_str(if data.is_empty() { &self.body } else { &data }).unwrap()
    }
}

async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Answer {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut b = Request::builder()
        .method(method)
        .uri(path)
        .header("host", format!("127.0.0.1:{}", addr.port()))
        .header("accept", "application/json, text/event-stream");
    if body.is_some() {
        b = b.header("content-type", "application/json");
    }
    if let Some(t) = token {
        b = b.header("authorization", format!("Bearer {t}"));
    }
    for (n, v) in headers {
        b = b.header(*n, *v);
    }
    let req = b
        .body(Full::new(Bytes::from(body.map(|v| v.to_string()).unwrap_or_default())))
        .unwrap();
    let res = tokio::time::timeout(Duration::from_secs(10), sender.send_request(req))
        .await
        .unwrap()
        .unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let bytes = tokio::time::timeout(Duration::from_secs(10), res.into_body().collect())
        .await
        .unwrap()
        .unwrap()
        .to_bytes();
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
}

fn call(id: u64, tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": {}}})
}

async fn open_session(addr: SocketAddr, token: &str) -> String {
    let a = send(addr, "POST", "/mcp", Some(token), &[], Some(initialize())).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let sid = a.headers["mcp-session-id"].to_str().unwrap().to_string();
    let h = [("mcp-session-id", sid.as_str()), ("mcp-protocol-version", "2025-11-25")];
    let n = send(
        addr,
        "POST",
        "/mcp",
        Some(token),
        &h,
        Some(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
    )
    .await;
    assert_eq!(n.status, StatusCode::ACCEPTED);
    sid
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metadata_names_the_resource_and_its_authorization_server() {
    let (server, addr, resource) = server(|_| jwt_check(JwksSource::Text(jwks())), Arc::default());
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let a = send(addr, "GET", path, None, &[], None).await;
        assert_eq!(a.status, StatusCode::OK, "{path}");
        let doc: Value = serde_json::from_str(&a.body).unwrap();
        assert_eq!(doc["resource"], json!(resource));
        assert_eq!(doc["authorization_servers"], json!([ISSUER]));
        assert_eq!(
            doc["scopes_supported"],
            json!(["mcp:tools", "notes:read", "notes:write"])
        );
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
    }
    let a = send(
        addr,
        "POST",
        "/.well-known/oauth-protected-resource",
        None,
        &[],
        Some(json!({})),
    )
    .await;
    assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED);
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_token_is_refused_with_its_status_and_challenge() {
    let (server, addr, resource) = server(|_| jwt_check(JwksSource::Text(jwks())), Arc::default());
    let metadata = format!(
        "resource_metadata=\"http://127.0.0.1:{}/.well-known/oauth-protected-resource/mcp\"",
        addr.port()
    );

    // No token: 401, where to get one and which scope to ask for.
    let a = send(addr, "POST", "/mcp", None, &[], Some(initialize())).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    assert_eq!(a.challenge(), format!("Bearer {metadata}, scope=\"mcp:tools\""));
    assert!(a.body.contains("needs an access token"), "{}", a.body);
    // Another scheme is no credential either.
    let a = send(
        addr,
        "POST",
        "/mcp",
        None,
        &[("authorization", "Basic YWxpY2U6cHc=")],
        Some(initialize()),
    )
    .await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    // A malformed Bearer header: 400 invalid_request.
    let a = send(
        addr,
        "POST",
        "/mcp",
        None,
        &[("authorization", "Bearer a b")],
        Some(initialize()),
    )
    .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(
        a.challenge().starts_with("Bearer error=\"invalid_request\""),
        "{}",
        a.challenge()
    );

    let header_for = |alg: Algorithm, kid: &str| {
        let mut h = Header::new(alg);
        h.kid = Some(kid.into());
        h
    };
    let claims = |extra: Value| {
        let mut c = json!({"iss": ISSUER, "aud": resource, "sub": "alice", "exp": now() + 300, "scope": "mcp:tools"});
        for (k, v) in extra.as_object().unwrap() {
            c[k] = v.clone();
        }
        c
    };
    let valid = token(&resource, json!({}));
    // A character in the middle of the signature changed: it no longer
    // verifies (the middle, so the text stays canonical base64url).
    let dot = valid.rfind('.').unwrap();
    let at = dot + (valid.len() - dot) / 2;
    let mut tampered = valid.clone().into_bytes();
    tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let none_header = base64url(br#"{"alg":"none","typ":"JWT"}"#);
    let payload = base64url(claims(json!({})).to_string().as_bytes());
    let cases: Vec<(&str, String, &str)> = vec![
        ("expired", token(&resource, json!({"exp": now() - 120})), "expired"),
        (
            "not yet valid",
            token(&resource, json!({"nbf": now() + 600})),
            "not valid yet",
        ),
        (
            "wrong audience",
            token(&resource, json!({"aud": "http://127.0.0.1:1/mcp"})),
            "another resource",
        ),
        (
            "wrong issuer",
            token(&resource, json!({"iss": "https://evil.example.test"})),
            "issuer",
        ),
        ("no subject", token(&resource, json!({"sub": null})), "sub"),
        (
            "alg none",
            format!("{none_header}.{payload}."),
            "not a JWT this server accepts",
        ),
        ("tampered signature", tampered, "signature"),
        (
            "unknown key id",
            encode(
                &header_for(Algorithm::ES256, "es-9"),
                &claims(json!({})),
                &EncodingKey::from_ec_pem(ES_PEM).unwrap(),
            )
            .unwrap(),
            "key this server does not know",
        ),
        (
            // HMAC with the RSA public key's bytes as the secret.
            "HMAC/RSA confusion",
            encode(
                &header_for(Algorithm::HS256, "rs-1"),
                &claims(json!({})),
                &EncodingKey::from_secret(RS_PUB_PEM).unwrap(),
            )
            .unwrap(),
            "algorithm is not accepted",
        ),
        ("garbage", "not-a-token".to_string(), "not a JWT"),
    ];
    for (what, t, why) in &cases {
        let a = send(addr, "POST", "/mcp", Some(t), &[], Some(initialize())).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{what}: {}", a.body);
        let c = a.challenge();
        assert!(c.starts_with("Bearer error=\"invalid_token\""), "{what}: {c}");
        assert!(c.contains(&metadata), "{what}: {c}");
        assert!(c.contains(why), "{what}: {c} should say {why}");
    }
    // The valid token passes, and nothing was created for the refusals.
    let a = send(addr, "POST", "/mcp", Some(&valid), &[], Some(initialize())).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(server.sessions().len(), 1);
    let refusals = server.auth_refusals();
    assert_eq!(refusals.get("expired"), Some(&1));
    assert_eq!(refusals.get("signature"), Some(&1));
    assert_eq!(refusals.get("missing"), Some(&2));
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hmac_listed_still_never_verifies_with_a_public_key() {
    let (server, addr, resource) = server(
        |_| {
            let mut j = JwtOptions::new(JwksSource::Text(jwks()));
            j.algorithms.push("HS256".into());
            TokenCheck::Jwt(j)
        },
        Arc::default(),
    );
    let mut h = Header::new(Algorithm::HS256);
    h.kid = Some("rs-1".into());
    let c = json!({"iss": ISSUER, "aud": resource, "sub": "mallory", "exp": now() + 300, "scope": "mcp:tools"});
    let forged = encode(&h, &c, &EncodingKey::from_secret(RS_PUB_PEM).unwrap()).unwrap();
    let a = send(addr, "POST", "/mcp", Some(&forged), &[], Some(initialize())).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    assert!(
        a.challenge().contains("key this server does not know"),
        "{}",
        a.challenge()
    );
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_belongs_to_whoever_opened_it_and_the_token_is_checked_every_time() {
    let seen: Seen = Arc::default();
    let (server, addr, resource) = server(|_| jwt_check(JwksSource::Text(jwks())), seen.clone());
    let alice = token(&resource, json!({}));
    let bob = token(&resource, json!({"sub": "bob", "tenant": "globex"}));
    let sid = open_session(addr, &alice).await;
    assert_eq!(
        seen.lock().as_slice(),
        &[("alice".to_string(), json!("acme"))],
        "the factory saw the principal"
    );
    let h = [("mcp-session-id", sid.as_str()), ("mcp-protocol-version", "2025-11-25")];

    let a = send(addr, "POST", "/mcp", Some(&alice), &h, Some(call(2, "notes.read"))).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.message()["result"]["structuredContent"], json!({"for": "alice"}));
    // Bob with alice's session id: as if it did not exist.
    let a = send(addr, "POST", "/mcp", Some(&bob), &h, Some(call(3, "notes.read"))).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "{}", a.body);
    assert!(!a.body.contains("alice"));
    let a = send(
        addr,
        "GET",
        "/mcp",
        Some(&bob),
        &[("mcp-session-id", sid.as_str()), ("accept", "text/event-stream")],
        None,
    )
    .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    let a = send(addr, "DELETE", "/mcp", Some(&bob), &h, None).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    // No token at all, with the session id: 401.
    let a = send(addr, "POST", "/mcp", None, &h, Some(call(4, "notes.read"))).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    // An expired token of alice's: 401, the session id is no credential.
    let old = token(&resource, json!({"exp": now() - 120}));
    let a = send(addr, "POST", "/mcp", Some(&old), &h, Some(call(5, "notes.read"))).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    assert_eq!(server.sessions().len(), 1, "bob's DELETE ended nothing");

    // The write tool needs notes:write: 403 naming every scope it needs.
    let a = send(addr, "POST", "/mcp", Some(&alice), &h, Some(call(6, "notes.write"))).await;
    assert_eq!(a.status, StatusCode::FORBIDDEN);
    let c = a.challenge();
    assert!(
        c.starts_with("Bearer error=\"insufficient_scope\", scope=\"mcp:tools notes:write\""),
        "{c}"
    );
    assert!(c.contains("resource_metadata="), "{c}");
    // A broader scope covers it (scope hierarchy).
    let writer = token(&resource, json!({"scope": "mcp:tools notes"}));
    let a = send(addr, "POST", "/mcp", Some(&writer), &[], Some(initialize())).await;
    assert_eq!(a.status, StatusCode::OK);
    let wsid = a.headers["mcp-session-id"].to_str().unwrap().to_string();
    let wh = [
        ("mcp-session-id", wsid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let a = send(addr, "POST", "/mcp", Some(&writer), &wh, Some(call(7, "notes.write"))).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    // Without the scope every request needs: 403 before anything else.
    let reader = token(&resource, json!({"scope": "notes:read"}));
    let a = send(addr, "POST", "/mcp", Some(&reader), &[], Some(initialize())).await;
    assert_eq!(a.status, StatusCode::FORBIDDEN);
    assert!(a.challenge().contains("scope=\"mcp:tools\""), "{}", a.challenge());

    // A stateless request: its own runtime, the principal reaches it.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let modern = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "notes.read", "arguments": {}, "_meta": meta}});
    let mh = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "notes.read"),
    ];
    let a = send(addr, "POST", "/mcp", Some(&bob), &mh, Some(modern.clone())).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.message()["result"]["structuredContent"], json!({"for": "bob"}));
    let a = send(addr, "POST", "/mcp", None, &mh, Some(modern)).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_rotate_without_a_restart() {
    let dir = std::env::temp_dir().join(format!("rcip-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("jwks.json");
    // First only the RSA key: the ES256 tokens are signed by an unknown key.
    std::fs::write(
        &file,
        json!({"keys": [jwk(RS_PEM, Algorithm::RS256, "rs-1")]}).to_string(),
    )
    .unwrap();
    let f = file.clone();
    let (server, addr, resource) = server(move |_| jwt_check(JwksSource::File(f)), Arc::default());
    let t = token(&resource, json!({}));
    let a = send(addr, "POST", "/mcp", Some(&t), &[], Some(initialize())).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    // The file changes: within a few reaper passes the new key is used.
    std::thread::sleep(Duration::from_millis(1100));
    std::fs::write(&file, jwks()).unwrap();
    let mut status = StatusCode::UNAUTHORIZED;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        status = send(addr, "POST", "/mcp", Some(&t), &[], Some(initialize()))
            .await
            .status;
        if status == StatusCode::OK {
            break;
        }
    }
    assert_eq!(status, StatusCode::OK, "the rotated file's key is used");
    // set_jwks replaces them at once; a set that does not parse keeps them.
    assert!(server.set_jwks("{\"keys\": 7}").is_err());
    server
        .set_jwks(&json!({"keys": [jwk(RS_PEM, Algorithm::RS256, "rs-1")]}).to_string())
        .unwrap();
    let a = send(addr, "POST", "/mcp", Some(&t), &[], Some(initialize())).await;
    assert_eq!(
        a.status,
        StatusCode::UNAUTHORIZED,
        "a checked token is checked again after a rotation"
    );
    stop(server).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opaque_tokens_go_to_the_hosts_verifier() {
    let calls = Arc::new(Mutex::new(0usize));
    let c = calls.clone();
    let (server, addr, _) = server(
        move |resource| {
            let resource = resource.to_string();
            TokenCheck::Verifier(Arc::new(move |token: &str| -> Result<Principal, TokenRefusal> {
                *c.lock() += 1;
                assert!(
                    std::thread::current().name().unwrap_or("").starts_with("rcip-mcp"),
                    "on a worker"
                );
                match token {
                    "opaque-alice" => Ok(Principal {
                        issuer: ISSUER.into(),
                        subject: "alice".into(),
                        scopes: vec!["mcp:tools".into()],
                        claims: serde_json::Map::from_iter([("tenant".to_string(), json!("acme"))]),
                        expires_at: Some(jsonwebtoken::get_current_timestamp() + 60),
                    }),
                    "down" => Err(TokenRefusal::Unavailable("introspection is down".into())),
                    _ => Err(TokenRefusal::Invalid(format!("not a token of {resource}"))),
                }
            }))
        },
        Arc::default(),
    );
    let a = send(addr, "POST", "/mcp", Some("opaque-alice"), &[], Some(initialize())).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let a = send(addr, "POST", "/mcp", Some("opaque-alice"), &[], Some(initialize())).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(*calls.lock(), 1, "a checked token is remembered until it expires");
    let a = send(addr, "POST", "/mcp", Some("revoked"), &[], Some(initialize())).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    assert!(a.challenge().contains("invalid_token"));
    let a = send(addr, "POST", "/mcp", Some("down"), &[], Some(initialize())).await;
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(a.headers.contains_key("retry-after"));
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verifier_given_after_bind_replaces_the_placeholder_and_what_it_remembered() {
    // `"verifier": true`: the check is the host's, given after bind.
    let (srv, addr, _) = server(
        |resource| {
            let o = AuthOptions::from_value(&json!({"resource": resource,
                "authorizationServers": [ISSUER], "verifier": true}))
            .unwrap();
            o.tokens
        },
        Arc::default(),
    );
    let a = send(addr, "POST", "/mcp", Some("t1"), &[], Some(initialize())).await;
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE, "no verifier yet: {}", a.body);
    assert!(a.body.contains("no token verifier is set yet"), "{}", a.body);
    let principal = |subject: &str, expires_at: u64| Principal {
        issuer: ISSUER.into(),
        subject: subject.into(),
        scopes: vec!["mcp:tools".into()],
        claims: serde_json::Map::new(),
        expires_at: Some(expires_at),
    };
    let first = move |token: &str| -> Result<Principal, TokenRefusal> {
        match token {
            "t1" => Ok(principal("alice", jsonwebtoken::get_current_timestamp() + 600)),
            "old" => Ok(principal("alice", 1_000)),
            _ => Err(TokenRefusal::Invalid(
                "revoked \"at\" 12:00\r\nX-Injected: 1 \u{e9}".into(),
            )),
        }
    };
    srv.set_token_verifier(Arc::new(first)).unwrap();
    let a = send(addr, "POST", "/mcp", Some("t1"), &[], Some(initialize())).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let a = send(addr, "POST", "/mcp", Some("old"), &[], Some(initialize())).await;
    assert_eq!(
        a.status,
        StatusCode::UNAUTHORIZED,
        "a principal past its expiresAt: {}",
        a.body
    );
    assert!(a.challenge().contains("expired"), "{}", a.challenge());
    let a = send(addr, "POST", "/mcp", Some("t2"), &[], Some(initialize())).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    // The host's text cannot break the header: quotes and controls replaced.
    assert!(
        a.challenge()
            .contains("error_description=\"revoked 'at' 12:00??X-Injected: 1 ?\""),
        "{}",
        a.challenge()
    );
    assert!(!a.headers.contains_key("x-injected"));
    // A new verifier: what the first one admitted is forgotten.
    srv.set_token_verifier(Arc::new(|_: &str| -> Result<Principal, TokenRefusal> {
        Err(TokenRefusal::Invalid("everything is revoked".into()))
    }))
    .unwrap();
    let a = send(addr, "POST", "/mcp", Some("t1"), &[], Some(initialize())).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{}", a.body);
    assert!(a.challenge().contains("everything is revoked"));
    stop(srv).await;

    // A server that validates JWTs takes no verifier; the options refuse
    // both at once, and a verifier that is not a boolean.
    let (jwt_server, _, _) = server(|_| jwt_check(JwksSource::Text(jwks())), Arc::default());
    let e = jwt_server
        .set_token_verifier(Arc::new(|_: &str| -> Result<Principal, TokenRefusal> {
            Err(TokenRefusal::Invalid("x".into()))
        }))
        .unwrap_err();
    assert!(e.contains("verifier"), "{e}");
    stop(jwt_server).await;
    let base = json!({"resource": "https://x.example/mcp", "authorizationServers": [ISSUER]});
    let with = |extra: Value| {
        let mut v = base.clone();
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        AuthOptions::from_value(&v).map(|_| ())
    };
    assert!(with(json!({"verifier": true, "jwks": {"keys": []}}))
        .unwrap_err()
        .contains("do not combine"));
    assert!(with(json!({"verifier": "yes"})).unwrap_err().contains("boolean"));
    assert!(with(json!({"verifier": false})).unwrap_err().contains("jwks"));
    assert!(with(json!({"verifier": true})).is_ok());
}

#[test]
fn a_principal_from_a_host_is_checked_field_by_field() {
    let p = Principal::from_value(&json!({"issuer": ISSUER, "subject": "alice",
        "scopes": ["a", "b", "a"], "claims": {"tenant": "acme"}, "expiresAt": 4102444800u64}))
    .unwrap();
    assert_eq!(p.scopes, ["a", "b"], "duplicates dropped, order kept");
    assert_eq!(p.expires_at, Some(4102444800));
    assert_eq!(Principal::from_value(&p.to_value()).unwrap(), p, "to_value reads back");
    let minimal = Principal::from_value(&json!({"issuer": ISSUER, "subject": "bob"})).unwrap();
    assert!(minimal.scopes.is_empty() && minimal.claims.is_empty() && minimal.expires_at.is_none());
    for (bad, says) in [
        (json!([]), "JSON object"),
        (json!({"subject": "bob"}), "needs \"issuer\""),
        (json!({"issuer": ISSUER, "subject": ""}), "\"subject\" must be"),
        (json!({"issuer": ISSUER, "subject": "a b"}), "\"subject\" must be"),
        (
            json!({"issuer": ISSUER, "subject": "bob", "scopes": "a b"}),
            "array of strings",
        ),
        (
            json!({"issuer": ISSUER, "subject": "bob", "scopes": ["a b"]}),
            "without spaces",
        ),
        (
            json!({"issuer": ISSUER, "subject": "bob", "claims": []}),
            "\"claims\" must be",
        ),
        (
            json!({"issuer": ISSUER, "subject": "bob", "expiresAt": -1}),
            "expiresAt",
        ),
        (
            json!({"issuer": ISSUER, "subject": "bob", "expires_at": 1}),
            "no field \"expires_at\"",
        ),
    ] {
        let e = Principal::from_value(&bad).unwrap_err();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn an_exposed_address_needs_authorization_or_an_explicit_opt_out() {
    let factory = |_: &SessionRequest<'_>| -> Result<Runtime, String> { Err("unused".into()) };
    // Refused before anything listens.
    let e = McpHttpServer::bind(&catalog(), "0.0.0.0:0", HttpOptions::default(), factory).unwrap_err();
    assert!(e.to_string().contains("without authorization"), "{e}");
    let e = HttpOptions::from_value(&json!({"auth": {"resource": "https://x.example/mcp",
        "authorizationServers": [ISSUER], "scopesSupported": ["offline_access"], "jwks": {"keys": []}}}))
    .map(|o| McpHttpServer::bind(&catalog(), "127.0.0.1:0", o, factory).map(|_| ()))
    .unwrap()
    .unwrap_err();
    assert!(e.to_string().contains("offline_access"), "{e}");
    let e = HttpOptions::from_value(&json!({"auth": {"resource": "https://x.example/mcp",
        "authorizationServers": [ISSUER], "jwks": {"keys": []}, "algorithms": ["none"]}}))
    .map(|o| McpHttpServer::bind(&catalog(), "127.0.0.1:0", o, factory).map(|_| ()))
    .unwrap()
    .unwrap_err();
    assert!(e.to_string().contains("none"), "{e}");
    let o = HttpOptions::from_value(&json!({"allowUnauthenticated": true})).unwrap();
    assert!(o.allow_unauthenticated);
    assert!(
        HttpOptions::from_value(&json!({"auth": {"resource": "https://x.example/mcp"}}))
            .unwrap_err()
            .contains("jwks")
    );
}

fn base64url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}
