"""How the Python SDK's bench servers listen (bench/mcp/python_server.py,
bench/python_app/fastmcp_tickets.py): uvicorn on a socket of 127.0.0.1
made with IPPROTO_TCP, so that asyncio sets TCP_NODELAY on every accepted
connection (with protocol 0 it does not, and each sequential call would
wait for a delayed ACK), quiet logging, and one line once listening:

    python: serving MCP on http://127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import logging
import socket
from typing import Any

import uvicorn


def serve(app: Any, port: int = 0, backlog: int = 1024) -> None:
    """Serves the ASGI `app` until the process is stopped."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(backlog)
    logging.getLogger("mcp").setLevel(logging.WARNING)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    print(f"python: serving MCP on http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    uvicorn.Server(config).run(sockets=[sock])
