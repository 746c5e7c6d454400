"""The ticket tracker's `tickets.search` (tests/mcp/tickets_app.py) served
by the official Python SDK's `MCPServer` (the `mcp` package, FastMCP's
successor) over Streamable HTTP under uvicorn, for the side-by-side run of
bench/python_app/compare.py (BENCHMARKS.md, "A declared Python app against
MCPServer"). The same tickets, the same search, a coroutine handler as in
the rcip app; SSE answers (the SDK's default), stateful sessions, quiet
logging. The listening socket is made with IPPROTO_TCP so that asyncio
sets TCP_NODELAY on every accepted connection (with protocol 0 it does
not, and each sequential call would wait for a delayed ACK).

Prints one line once listening:
    python: serving MCP on http://127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import logging
import socket
import sys
from typing import Any, Dict, List

import uvicorn
from mcp.server.mcpserver import MCPServer

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
    app = server.streamable_http_app()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    logging.getLogger("mcp").setLevel(logging.WARNING)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    print(f"python: serving MCP on http://127.0.0.1:{port}/mcp", flush=True)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
