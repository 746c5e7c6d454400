"""The ticket tracker's `tickets.search` (tests/mcp/tickets_app.py) served
by the official Python SDK's `MCPServer` (the `mcp` package, FastMCP's
successor) over Streamable HTTP under uvicorn, for the side-by-side run of
bench/python_app/compare.py (BENCHMARKS.md, "A declared Python app against
MCPServer"). The same tickets, the same search, a coroutine handler as in
the rcip app; SSE answers (the SDK's default), stateful sessions,
listening through bench/mcp/uvicorn_serve.py (TCP_NODELAY on every
connection, quiet logging).

Prints one line once listening:
    python: serving MCP on http://127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List

from mcp.server.mcpserver import MCPServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
from uvicorn_serve import serve  # noqa: E402

TICKETS: List[Dict[str, Any]] = [
    {"ticketId": 1, "title": "Printer jam on floor 2", "status": "open"},
    {"ticketId": 2, "title": "Printer out of toner", "status": "open"},
    {"ticketId": 3, "title": "Coffee machine leaks", "status": "closed"},
]


def main() -> int:
    server = MCPServer("ticketTracker", version="1.0.0", log_level="WARNING")

    async def search(query: str, archive: bool = False) -> Dict[str, Any]:
        """Finds the tickets whose title contains the query."""
        found = [t for t in TICKETS if query.lower() in t["title"].lower()]
        return {"tickets": found, "archived": 0}

    server.add_tool(search, name="tickets.search", title="Search tickets",
                    description="Finds the tickets whose title contains the query.")
    serve(server.streamable_http_app())
    return 0


if __name__ == "__main__":
    sys.exit(main())
