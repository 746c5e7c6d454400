// The authorization server of the OAuth test (test_oauth.py starts it):
// oauth2-mock-server 9.3.0 (pinned by package-lock.json) on 127.0.0.1,
// port 0, with one RS256 key.
//
// Consent is automated by the package itself: GET /authorize grants at once,
// redirecting to the client's redirect_uri with a fresh code (and keeps the
// PKCE code_challenge of that code; POST /token checks the code_verifier
// against it). What the stock server leaves out, this script adds with its
// hooks: the granted scope is the one asked for at /authorize (the stock
// token endpoint would say "dummy"), `aud` is the RFC 8707 `resource` of the
// token request, `sub` is SUBJECT and a `tenant` claim TENANT. Every
// /authorize and /token request is recorded; GET /log answers the record so
// the test can check the sequence really happened.
//
// It prints one line, {"issuer": "http://127.0.0.1:PORT"}, once it listens,
// and stops by itself when its stdin closes or after LIFETIME_SECONDS.
import { OAuth2Server } from "oauth2-mock-server";

const SUBJECT = "alice";
const TENANT = "acme";
const LIFETIME_SECONDS = Number(process.env.RCIP_AS_LIFETIME_SECONDS ?? "120");

const server = new OAuth2Server();
await server.issuer.keys.generate("RS256");

const log = [];
const scopeOfCode = new Map();

server.service.on("beforeAuthorizeRedirect", (redirect, req) => {
  const q = new URL(req.url, "http://placeholder").searchParams;
  const code = redirect.url.searchParams.get("code");
  if (code !== null) scopeOfCode.set(code, q.get("scope") ?? "");
  log.push({
    endpoint: "authorize",
    client_id: q.get("client_id"),
    response_type: q.get("response_type"),
    redirect_uri: q.get("redirect_uri"),
    scope: q.get("scope"),
    resource: q.get("resource"),
    code_challenge: q.get("code_challenge"),
    code_challenge_method: q.get("code_challenge_method"),
    code,
  });
});

server.service.on("beforeTokenSigning", (token, req) => {
  const body = req.body ?? {};
  const granted = scopeOfCode.get(body.code);
  if (granted !== undefined) token.payload.scope = granted;
  if (body.resource !== undefined) token.payload.aud = body.resource;
  token.payload.sub = SUBJECT;
  token.payload.tenant = TENANT;
  token.payload.client_id = body.client_id;
});

server.service.on("beforeResponse", (response, req) => {
  const body = req.body ?? {};
  log.push({
    endpoint: "token",
    status: response.statusCode,
    grant_type: body.grant_type,
    client_id: body.client_id,
    code: body.code,
    code_verifier: body.code_verifier,
    redirect_uri: body.redirect_uri,
    resource: body.resource,
  });
  // The scope actually granted, so the client records what it holds.
  const granted = scopeOfCode.get(body.code);
  if (granted !== undefined) response.body.scope = granted;
});

server.service.addRoute("GET", "/log", (_req, res) => {
  res.setHeader("Content-Type", "application/json");
  res.end(JSON.stringify(log));
});

await server.start(0, "127.0.0.1");
server.issuer.url = `http://127.0.0.1:${server.address().port}`;
process.stdout.write(JSON.stringify({ issuer: server.issuer.url }) + "\n");

const stop = async () => {
  await server.stop().catch(() => {});
  process.exit(0);
};
setTimeout(stop, LIFETIME_SECONDS * 1000).unref();
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.resume();
