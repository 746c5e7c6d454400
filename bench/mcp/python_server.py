"""The official Python MCP SDK's server (the `mcp` package, MCPServer over
Streamable HTTP) serving the dispatch desk's `board.listOpenVisits` with the
same input schema, for the side-by-side run of `rcip-mcp-load` (BENCHMARKS.md,
"MCP over HTTP"). One process, quiet logging, SSE responses (the SDK's
default, `json_response=False`), stateful sessions. Listens through bench/mcp/uvicorn_serve.py (TCP_NODELAY
on every connection).

Prints one line once listening, like `dispatch_desk --mcp-http`:
    python: serving MCP on http://127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from uvicorn_serve import serve  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CATALOG = REPO / "examples-c" / "dispatch" / "catalog.json"

# The desk's first three unassigned open visits (what
# `board.listOpenVisits {"unassignedOnly": true, "limit": 3}` answers on a fresh desk).
VISITS = [
    {"id": "V-1003", "site": "Harbor Bakery", "issue": "Walk-in cooler compressor short-cycling", "skill": "hvac",
     "priority": "urgent", "status": "new", "date": "2026-01-05", "window": "afternoon", "notes": 1},
    {"id": "V-1005", "site": "Riverside Gym", "issue": "Shower drains slow in the locker room", "skill": "plumbing",
     "priority": "low", "status": "new", "date": "2026-01-06", "window": "morning", "notes": 0},
    {"id": "V-1009", "site": "Pine Hotel", "issue": "Room 214 thermostat is blank", "skill": "electrical",
     "priority": "normal", "status": "new", "date": "2026-01-06", "window": "afternoon", "notes": 0},
]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--max-sessions", type=int, default=1000)
    args = parser.parse_args()

    capability = next(c for c in json.loads(CATALOG.read_text())["capabilities"] if c["id"] == "board.listOpenVisits")
    server = MCPServer("dispatchDesk", version="1.0.0", log_level="WARNING")

    def list_open_visits(
        priority: str | None = None,
        technicianId: str | None = None,
        unassignedOnly: bool | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        visits = [v for v in VISITS if priority is None or v["priority"] == priority]
        return {"visits": visits[: limit or len(visits)], "total": 10}

    server.add_tool(list_open_visits, name=capability["id"], title=capability["title"],
                    description=capability["description"])
    # The same advertised input schema as the desk's capability.
    server._tool_manager.get_tool(capability["id"]).parameters = capability["inputSchema"]

    serve(server.streamable_http_app(max_sessions=args.max_sessions), args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
