"""rcip.McpSession's tool naming and content-block options from Python
(**rcip**, docs/MCP.md "Tool names" and "Content blocks"): the keywords
reach the session, refusals raise, and stats() counts replaced blocks. The
rules themselves are tested in the library (src/mcp)."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

import rcip

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"


class Wire:
    def __init__(self) -> None:
        self.received: List[Dict[str, Any]] = []
        self.session: Any = None

    def __call__(self, text: str) -> None:
        self.received.append(json.loads(text))

    def request(self, id: Any, method: str, params: Any = None) -> Dict[str, Any]:
        self.session.receive({"jsonrpc": "2.0", "id": id, "method": method, "params": params or {}})
        return next(m for m in self.received if m.get("id") == id and "method" not in m)

    def initialize(self) -> None:
        self.request(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
        self.session.receive('{"jsonrpc":"2.0","method":"notifications/initialized"}')


@pytest.fixture
def studio_catalog(catalog_dict: Dict[str, Any]):
    catalog_dict["capabilities"].append(
        {
            "id": "charts.render",
            "title": "Render chart",
            "description": "Returns the chart it is given.",
            "scopeIds": [],
            "effect": "read",
            "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "properties": {"chart": {}, "caption": {"type": "string"}}},
        }
    )
    c = rcip.Catalog(catalog_dict)
    yield c
    c.close()


def test_safe_tool_names_list_and_call_back(catalog):
    wire = Wire()
    with rcip.Runtime(catalog) as runtime:
        runtime.host.bind("greeting.say", lambda inv: {"text": "hello " + inv.input["name"]})
        with rcip.McpSession(runtime, on_message=wire, workers=0, tool_names="safe") as session:
            wire.session = session
            wire.initialize()
            tools = wire.request(1, "tools/list")["result"]["tools"]
            assert sorted(t["name"] for t in tools) == ["greeting_say", "mail_send", "tickets_create", "tickets_list", "tickets_purge"]
            r = wire.request(2, "tools/call", {"name": "greeting_say", "arguments": {"name": "Ada"}})["result"]
            assert r["structuredContent"] == {"text": "hello Ada"}
            assert r["_meta"]["rcip/outcome"]["capabilityId"] == "greeting.say"


def test_a_colliding_tool_name_is_refused_naming_both_ids(catalog):
    with rcip.Runtime(catalog) as runtime:
        with pytest.raises(rcip.InvalidArgumentError) as e:
            rcip.McpSession(runtime, on_message=lambda m: None, tool_names={"tickets.list": "greeting.say"})
        assert '"greeting.say"' in str(e.value) and '"tickets.list"' in str(e.value)


def test_content_blocks_and_the_replaced_count(studio_catalog):
    wire = Wire()
    content = {"charts.render": [{"type": "text", "property": "caption"}, {"type": "image", "property": "chart"}]}
    with rcip.Runtime(studio_catalog) as runtime:
        runtime.host.bind("charts.render", lambda inv: inv.input)
        with rcip.McpSession(runtime, on_message=wire, workers=0, content=content) as session:
            wire.session = session
            wire.initialize()
            output = {"caption": "Load", "chart": {"data": PNG, "mimeType": "image/png"}}
            r = wire.request(1, "tools/call", {"name": "charts.render", "arguments": output})["result"]
            assert r["content"] == [
                {"type": "text", "text": "Load"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
            ]
            assert r["structuredContent"] == output
            assert session.stats() == {"inFlight": 0, "droppedNotifications": 0, "contentReplaced": 0}

            bad = {"chart": {"data": "not base64", "mimeType": "image/png"}}
            r = wire.request(2, "tools/call", {"name": "charts.render", "arguments": bad})["result"]
            assert r["isError"] is False
            assert r["_meta"]["rcip/outcome"]["status"] == "succeeded"
            assert r["_meta"]["rcip/contentReplaced"] == 1
            assert r["content"][0]["type"] == "text" and "is not base64" in r["content"][0]["text"]
            assert session.stats()["contentReplaced"] == 1


def test_a_content_mapping_the_schema_does_not_declare_is_refused(studio_catalog):
    with rcip.Runtime(studio_catalog) as runtime:
        with pytest.raises(rcip.InvalidArgumentError, match='"poster"'):
            rcip.McpSession(runtime, on_message=lambda m: None, content={"charts.render": [{"type": "image", "property": "poster"}]})
