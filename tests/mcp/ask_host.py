"""A small rcip host whose handler asks the MCP client's user
(`Invocation.elicit`, **rcip**) for the tests of handler elicitation
(tests/mcp/test_side_channel.py), through the Python binding:

    python ask_host.py stdio        serves one MCP session on stdin/stdout
    python ask_host.py http         serves Streamable HTTP on 127.0.0.1:0 and
                                    prints "rcip: serving MCP on URL" once

`profile.ask` asks for a name (a string with a default, SEP-1034) and a tone
(a titled single-select enum, SEP-1330) from a deferred handler: the answer
completes the invocation on the session worker that delivers it.
`reply.draft` asks the client to sample (`Invocation.create_message`) the
same way. A client that did not declare elicitation (sampling) gets a
failed call (isError), with the reason on standard error."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bindings" / "python"))
os.environ.setdefault("RCIP_LIBRARY", str(REPO / "target" / "release" / "librcip.so"))

import rcip  # noqa: E402

CATALOG = {
    "protocolVersion": "1.0",
    "application": {"id": "askHost", "name": "Ask host", "description": "Asks its MCP client's user.", "version": "1.0.0"},
    "scopes": [],
    "capabilities": [
        {
            "id": "profile.ask",
            "title": "Ask for a profile",
            "description": "Asks the user for a name and a tone and answers with what the user chose.",
            "scopeIds": [],
            "effect": "read",
            "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
            "outputSchema": {
                "type": "object",
                "properties": {"action": {"enum": ["accept", "decline", "cancel"]}, "content": {"type": "object"}},
                "required": ["action"],
                "additionalProperties": False,
            },
        },
        {
            "id": "reply.draft",
            "title": "Draft a reply",
            "description": "Asks the client's model to draft a reply to the prompt and answers with the client's reply.",
            "scopeIds": [],
            "effect": "read",
            "inputSchema": {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"], "additionalProperties": False},
            "outputSchema": {
                "type": "object",
                "properties": {"result": {"type": "object"}, "error": {"type": "object"}, "cancelled": {"const": True}},
                "additionalProperties": False,
            },
        },
    ],
}

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "default": "Ada"},
        "tone": {"type": "string", "title": "Tone", "oneOf": [{"const": "warm", "title": "Warm"}, {"const": "dry", "title": "Dry"}]},
    },
    "required": ["tone"],
}


def ask(inv: rcip.Invocation) -> None:
    inv.defer()
    try:
        future = inv.elicit("Who are you, and how should I sound?", SCHEMA)
    except rcip.RcipError as e:
        print("ask_host: cannot ask: %s" % e, file=sys.stderr, flush=True)
        inv.fail()
        inv.close()
        return

    def answered(f: Any) -> None:
        answer: rcip.ElicitResult = f.result()
        output: dict[str, Any] = {"action": answer.action}
        if answer.content is not None:
            output["content"] = answer.content
        inv.complete(output)
        inv.close()

    future.add_done_callback(answered)


def draft(inv: rcip.Invocation) -> None:
    """Asks the client to sample (`Invocation.create_message`); the reply
    completes the invocation."""
    inv.defer()
    params = {"messages": [{"role": "user", "content": {"type": "text", "text": inv.input["prompt"]}}], "maxTokens": 50}
    try:
        future = inv.create_message(params)
    except rcip.RcipError as e:
        print("ask_host: cannot sample: %s" % e, file=sys.stderr, flush=True)
        inv.fail()
        inv.close()
        return

    def replied(f: Any) -> None:
        inv.complete(f.result())
        inv.close()

    future.add_done_callback(replied)


def runtime(catalog: Any) -> rcip.Runtime:
    r = rcip.Runtime(catalog)
    r.host.bind("profile.ask", ask)
    r.host.bind("reply.draft", draft)
    return r


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    catalog = rcip.Catalog(CATALOG)
    if mode == "stdio":
        with runtime(catalog) as r, rcip.McpSession(r) as session:
            session.serve_stdio()
    else:
        with rcip.McpHttpServer(catalog, lambda setup: runtime(catalog)) as server:
            print("rcip: serving MCP on %s" % server.url, flush=True)
            server.serve()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
