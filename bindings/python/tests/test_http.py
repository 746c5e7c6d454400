"""rcip.McpHttpServer: MCP over Streamable HTTP from Python, one runtime per
session, driven with the standard library's HTTP client on 127.0.0.1."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
from typing import Any, Dict, List, Optional, Tuple

import pytest

import rcip
from conftest import CATALOG, HERE


def _post(url: str, body: Dict[str, Any], session: Optional[str] = None) -> Tuple[int, Dict[str, str], str]:
    host_port = url.split("//", 1)[1].split("/", 1)[0]
    conn = http.client.HTTPConnection(host_port, timeout=10)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if session:
        headers["Mcp-Session-Id"] = session
    conn.request("POST", "/mcp", json.dumps(body), headers)
    resp = conn.getresponse()
    text = resp.read().decode("utf-8")
    result = (resp.status, {k.lower(): v for k, v in resp.getheaders()}, text)
    conn.close()
    return result


def _answer(text: str) -> Dict[str, Any]:
    """The JSON-RPC answer of a JSON or SSE body."""
    try:
        value: Dict[str, Any] = json.loads(text)
        return value
    except ValueError:
        data = [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ") and line != "data: "]
        last: Dict[str, Any] = json.loads(data[-1])
        return last


def _initialize(url: str, client: str) -> str:
    status, headers, text = _post(
        url,
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": client, "version": "1"}}},
    )
    assert status == 200, text
    _post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers["mcp-session-id"])
    return headers["mcp-session-id"]


def test_each_session_gets_a_runtime_from_the_factory() -> None:
    setups: List[rcip.SessionSetup] = []

    def factory(setup: rcip.SessionSetup) -> rcip.Runtime:
        setups.append(setup)
        runtime = rcip.Runtime(CATALOG)
        runtime.host.bind("greeting.say", lambda inv: {"text": "hello %s from %s" % (inv.input["name"], setup.client_name)})
        if setup.client_name == "ticket-agent":
            runtime.host.set_context(["tickets"])
        return runtime

    with rcip.McpHttpServer(CATALOG, factory, options={"forwardHeaders": ["authorization"]}) as server:
        server.start()
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/mcp")
        a = _initialize(server.url, "ticket-agent")
        b = _initialize(server.url, "other-agent")
        assert a != b and [s.client_name for s in setups] == ["ticket-agent", "other-agent"]
        status, headers, text = _post(server.url, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "greeting.say", "arguments": {"name": "Ada"}}}, a)
        assert status == 200 and headers["content-type"] == "text/event-stream"
        assert _answer(text)["result"]["structuredContent"] == {"text": "hello Ada from ticket-agent"}
        # The host reaches each session's own runtime.
        listed = sorted(s["sessionId"] for s in server.sessions())
        assert listed == sorted([a, b])
        session_a = server.session(a)
        assert session_a is not None
        snapshot = session_a.client.snapshot()
        assert snapshot.context["activeScopeIds"] == ["tickets"]
        session_b = server.session(b)
        assert session_b is not None and session_b.client.snapshot().context["activeScopeIds"] == []
        session_b.close()
        assert server.session("no-such-session") is None
        server.shutdown()
        # The session ended: its runtime is closed, the handle says so.
        with pytest.raises(ValueError):
            session_a.host.refresh()
        session_a.close()


def test_a_failing_factory_fails_initialize_and_is_recorded() -> None:
    def factory(setup: rcip.SessionSetup) -> rcip.Runtime:
        raise RuntimeError("no runtime for %s" % setup.client_name)

    with rcip.McpHttpServer(CATALOG, factory) as server:
        server.start()
        status, headers, text = _post(server.url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "clientInfo": {"name": "x", "version": "1"}}})
        assert status == 200 and "mcp-session-id" not in headers
        assert json.loads(text)["error"]["code"] == -32603
        assert [str(e) for e in server.factory_errors] == ["no runtime for x"]


def test_bad_options_and_addresses_raise() -> None:
    with pytest.raises(rcip.InvalidArgumentError):
        rcip.McpHttpServer(CATALOG, lambda s: rcip.Runtime(CATALOG), options={"nope": 1})
    with pytest.raises(rcip.InvalidArgumentError):
        rcip.McpHttpServer(CATALOG, lambda s: rcip.Runtime(CATALOG), "localhost")
    # An address beyond loopback needs authorization (refused before
    # anything is bound) ...
    with pytest.raises(rcip.InvalidArgumentError, match="without authorization"):
        rcip.McpHttpServer(CATALOG, lambda s: rcip.Runtime(CATALOG), "192.0.2.1:1")
    # ... or an explicit opt-out; this one then cannot be bound at all.
    with pytest.raises(rcip.IoError):
        rcip.McpHttpServer(CATALOG, lambda s: rcip.Runtime(CATALOG), "192.0.2.1:1", options={"allowUnauthenticated": True})


def test_python_m_rcip_serve_http_serves_a_declared_app(tmp_path: Any) -> None:
    module = tmp_path / "hello_app.py"
    module.write_text(
        "import rcip\n"
        "app = rcip.App('hello', name='Hello', description='Greets.')\n"
        "@app.capability(effect='read')\n"
        "def greet(name: str) -> str:\n"
        "    '''Greet.\n\n    Greets someone by name.\n    '''\n"
        "    return 'hello ' + name\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(HERE, ".."), HERE]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rcip", "serve", str(module) + ":app", "--http", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("rcip: serving MCP on http://127.0.0.1:"), line
        url = line.split(" on ", 1)[1].strip()
        sid = _initialize(url, "cli-test")
        status, _, text = _post(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "greet", "arguments": {"name": "Bo"}}}, sid)
        assert status == 200
        assert _answer(text)["result"]["structuredContent"] == {"result": "hello Bo"}
    finally:
        proc.send_signal(2)  # Ctrl-C: the server shuts down
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode == 130, proc.stderr.read() if proc.stderr else ""


# A JWK Set of the test key crates/rcip-mcp/tests/fixtures/test-es256.pem
# and a token it signed for alice of tenant acme, valid until 2100 for the
# resource below (made once with PyJWT; the key protects nothing).
_TEST_JWKS = {"keys": [{"kty": "EC", "crv": "P-256", "x": "ROYprD1LjkvmuwJiqXq3Tx0BET6t5LA3Dxpc9huXKDE", "y": "1Yh4cyY3-eK7zUUbujcp7dbbaqxGUQzYR7H_-3Ex78o", "kid": "es-1", "alg": "ES256", "use": "sig"}]}
_ALICE_TOKEN = (
    "eyJhbGciOiJFUzI1NiIsImtpZCI6ImVzLTEiLCJ0eXAiOiJKV1QifQ."
    "eyJpc3MiOiJodHRwczovL2F1dGguZXhhbXBsZS50ZXN0IiwiYXVkIjoiaHR0cDovLzEyNy4wLjAuMS9tY3AiLCJzdWIiOiJhbGljZSIsImV4cCI6NDEwMjQ0NDgwMCwic2NvcGUiOiJtY3A6dG9vbHMiLCJ0ZW5hbnQiOiJhY21lIn0."
    "VJYYxtdLpXQfQ1ELRStCqrzfrP0Ki_J3eJmzp2taVnkCqXghjV4XAwXZoxYbnDFquvBeEnvHFB2XYwuEGRetVw"
)


def test_the_factory_sees_the_authenticated_principal() -> None:
    setups: List[rcip.SessionSetup] = []

    asked: List[Any] = []

    def policy(request: rcip.PolicyRequest) -> str:
        # The server gave the runtime the token's principal.
        asked.append(request.principal)
        return "allow" if request.principal and request.principal["subject"] == "alice" else "deny"

    def factory(setup: rcip.SessionSetup) -> rcip.Runtime:
        setups.append(setup)
        runtime = rcip.Runtime(CATALOG, policy=policy)
        tenant = (setup.principal or {}).get("claims", {}).get("tenant")
        runtime.host.bind("greeting.say", lambda inv: {"text": "hello %s of %s" % (inv.input["name"], tenant)})
        return runtime

    auth = {
        "resource": "http://127.0.0.1/mcp",
        "authorizationServers": ["https://auth.example.test"],
        "requiredScopes": ["mcp:tools"],
        "jwks": _TEST_JWKS,
        "claims": ["tenant"],
    }
    with rcip.McpHttpServer(CATALOG, factory, options={"auth": auth}) as server:
        server.start()
        host_port = server.url.split("//", 1)[1].split("/", 1)[0]

        def post(body: Dict[str, Any], token: Optional[str], session: Optional[str] = None) -> Tuple[int, Dict[str, str], str]:
            conn = http.client.HTTPConnection(host_port, timeout=10)
            headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
            if token:
                headers["Authorization"] = "Bearer " + token
            if session:
                headers["Mcp-Session-Id"] = session
            conn.request("POST", "/mcp", json.dumps(body), headers)
            resp = conn.getresponse()
            result = (resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read().decode("utf-8"))
            conn.close()
            return result

        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}
        status, headers, _ = post(init, None)
        assert status == 401
        assert headers["www-authenticate"].startswith('Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp"')
        assert setups == []
        status, headers, text = post(init, _ALICE_TOKEN)
        assert status == 200, text
        sid = headers["mcp-session-id"]
        assert len(setups) == 1 and setups[0].principal is not None
        principal = setups[0].principal
        assert (principal["issuer"], principal["subject"], principal["scopes"]) == ("https://auth.example.test", "alice", ["mcp:tools"])
        assert principal["claims"] == {"tenant": "acme"} and principal["expiresAt"] == 4102444800
        post({"jsonrpc": "2.0", "method": "notifications/initialized"}, _ALICE_TOKEN, sid)
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "greeting.say", "arguments": {"name": "Ada"}}}
        status, _, text = post(call, _ALICE_TOKEN, sid)
        assert status == 200 and _answer(text)["result"]["structuredContent"] == {"text": "hello Ada of acme"}
        assert [p["subject"] for p in asked] == ["alice"] and asked[0]["claims"] == {"tenant": "acme"}
        # The session id alone is no credential.
        status, _, _ = post(call, None, sid)
        assert status == 401


def test_opaque_tokens_go_to_the_hosts_verifier() -> None:
    checked: List[str] = []

    def verify(token: str) -> Optional[Dict[str, Any]]:
        checked.append(token)
        if token == "good":
            return {"issuer": "https://auth.example.test", "subject": "carol", "scopes": ["mcp:tools"], "claims": {"tenant": "initech"}, "expiresAt": 4102444800}
        if token == "revoked":
            raise rcip.TokenRefused('revoked "at" 12:00')
        if token == "boom":
            raise RuntimeError("introspection endpoint unreachable")
        if token == "no-issuer":
            return {"subject": "carol"}
        return None

    setups: List[rcip.SessionSetup] = []

    def factory(setup: rcip.SessionSetup) -> rcip.Runtime:
        setups.append(setup)
        return rcip.Runtime(CATALOG)

    auth = {"resource": "http://127.0.0.1/mcp", "authorizationServers": ["https://auth.example.test"], "requiredScopes": ["mcp:tools"]}
    with rcip.McpHttpServer(CATALOG, factory, options={"auth": auth}, token_verifier=verify) as server:
        server.start()
        host_port = server.url.split("//", 1)[1].split("/", 1)[0]

        def init(token: str) -> Tuple[int, Dict[str, str], str]:
            conn = http.client.HTTPConnection(host_port, timeout=10)
            body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}
            conn.request("POST", "/mcp", json.dumps(body), {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Authorization": "Bearer " + token})
            resp = conn.getresponse()
            result = (resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read().decode("utf-8"))
            conn.close()
            return result

        status, _, text = init("good")
        assert status == 200, text
        assert setups[0].principal == {"issuer": "https://auth.example.test", "subject": "carol", "scopes": ["mcp:tools"], "claims": {"tenant": "initech"}, "expiresAt": 4102444800}
        assert init("good")[0] == 200 and checked == ["good"], "a checked token is remembered"
        status, headers, _ = init("revoked")
        assert status == 401 and "error_description=\"revoked 'at' 12:00\"" in headers["www-authenticate"]
        status, headers, _ = init("unknown")
        assert status == 401 and 'error="invalid_token"' in headers["www-authenticate"]
        status, headers, text = init("boom")
        assert status == 503 and "retry-after" in headers
        assert "unreachable" not in text, "an exception's text stays with the host"
        assert [str(e) for e in server.token_verifier_errors] == ["introspection endpoint unreachable"]
        status, _, text = init("no-issuer")
        assert status == 503 and "needs \\\"issuer\\\"" in text, text
        assert len(setups) == 2
        # A new verifier; what the first admitted is forgotten.
        server.set_token_verifier(lambda token: None)
        assert init("good")[0] == 401
        with pytest.raises(TypeError, match="coroutine"):

            async def later(token: str) -> None:
                return None

            server.set_token_verifier(later)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="auth"):
        rcip.McpHttpServer(CATALOG, factory, token_verifier=verify)
    jwt_auth = dict(auth, jwks=_TEST_JWKS)
    with rcip.McpHttpServer(CATALOG, factory, options={"auth": jwt_auth}) as server:
        with pytest.raises(rcip.InvalidArgumentError, match="verifier"):
            server.set_token_verifier(verify)


def test_without_auth_the_principal_is_none_and_exposed_binds_are_refused() -> None:
    seen: List[Optional[Dict[str, Any]]] = []

    def factory(setup: rcip.SessionSetup) -> rcip.Runtime:
        seen.append(setup.principal)
        return rcip.Runtime(CATALOG)

    with rcip.McpHttpServer(CATALOG, factory) as server:
        server.start()
        _initialize(server.url, "anyone")
    assert seen == [None]
    # A host sets one itself; its policy reads it; None clears it.
    got: List[Any] = []
    runtime = rcip.Runtime(CATALOG, policy=lambda r: got.append(r.principal) or "allow")
    runtime.host.bind("greeting.say", lambda inv: {"text": "hi"})
    runtime.host.set_principal({"subject": "bob", "claims": {"tenant": "globex"}})
    runtime.client.invoke("greeting.say", {"name": "x"})
    runtime.host.set_principal(None)
    runtime.client.invoke("greeting.say", {"name": "y"})
    assert got == [{"subject": "bob", "claims": {"tenant": "globex"}}, None]
    with pytest.raises(rcip.InvalidArgumentError):
        runtime.host.set_principal([1])  # type: ignore[arg-type]
    runtime.close()
    with pytest.raises(rcip.InvalidArgumentError, match="without authorization"):
        rcip.McpHttpServer(CATALOG, factory, "0.0.0.0:0")


def test_drain_stops_a_server_with_nothing_in_flight() -> None:
    with rcip.McpHttpServer(CATALOG, lambda s: rcip.Runtime(CATALOG)) as server:
        server.start()
        sid = _initialize(server.url, "drained")
        assert [s["sessionId"] for s in server.sessions()] == [sid]
        host_port = server.url.split("//", 1)[1].split("/", 1)[0]
        conn = http.client.HTTPConnection(host_port, timeout=10)
        conn.request("GET", "/readyz")
        resp = conn.getresponse()
        assert (resp.status, resp.read()) == (200, b"ready\n")
        conn.close()
        server.drain(2000)
        assert server.sessions() == []
