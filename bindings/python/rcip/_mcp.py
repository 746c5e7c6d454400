"""The MCP bridge: serve a runtime's capabilities to any Model Context
Protocol client (``rcip_mcp_session_*`` in include/rcip.h; docs/MCP.md has
the mapping)."""

from __future__ import annotations

import asyncio
import json
from ctypes import byref
from typing import Any, Callable, Dict, Mapping, Optional, Union

from . import _lib
from ._handle import Owner, registry
from ._lib import lib
from ._runtime import (
    Runtime,
    _FnEntry,
    _json_arg,
    _keep_forever,
    _new_out,
    _registering,
    _running_loop,
    _user_data_free,
)
from .errors import check


class _MessageEntry(_FnEntry):
    """The session's message callback: called with each message's text, in
    order, one at a time."""


@_lib.MCP_MESSAGE_CALLBACK
def _message_trampoline(key: Optional[int], text: Optional[bytes]) -> None:
    try:
        registry.get(key).fire((text or b"").decode("utf-8"))
    except BaseException:  # noqa: BLE001 - nothing may reach C
        pass


# The library may call it until the last session is freed, possibly late in
# interpreter shutdown: it is never deallocated.
_keep_forever(_message_trampoline)

_NO_CALLBACK = _lib.MCP_MESSAGE_CALLBACK()


class McpSession(Owner):
    """An MCP server session (MCP revision 2025-11-25) over ``runtime``'s
    consumer surface: ``initialize``, ``ping``, ``tools/list``,
    ``tools/call``, cancellation and ``notifications/tools/list_changed``.

    ``on_message(text)`` receives every message the session sends (one
    JSON-RPC message, no newline), in order, one at a time, on whichever
    thread produced it; it must not block for long. Without it the session
    writes each message to the process's standard output as one line: use
    that with ``serve_stdio()`` and print nothing else to standard output
    (log to standard error).

    Options (docs/MCP.md): ``filter`` (an ``RcipCapabilityFilter`` for
    tools/list, e.g. ``{"availableOnly": True}``), ``confirmation``
    (``"host"``, the default: a confirmation is an error result only the
    host can approve; or ``"elicit"``: the host lets the MCP client's user
    approve it through elicitation), ``page_size``, ``server_name``,
    ``server_version``, ``instructions``, ``max_message_bytes``; or
    ``options`` as the JSON object itself.
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        on_message: Optional[Callable[[str], Any]] = None,
        filter: Optional[Mapping[str, Any]] = None,
        confirmation: Optional[str] = None,
        page_size: Optional[int] = None,
        server_name: Optional[str] = None,
        server_version: Optional[str] = None,
        instructions: Optional[str] = None,
        max_message_bytes: Optional[int] = None,
        options: Optional[Union[str, bytes, Mapping[str, Any]]] = None,
    ) -> None:
        if not isinstance(runtime, Runtime):
            raise TypeError("rcip: McpSession needs a Runtime")
        body: Dict[str, Any] = {}
        if options is not None:
            body.update(json.loads(options) if isinstance(options, (str, bytes)) else options)
        for name, value in (
            ("filter", filter),
            ("confirmation", confirmation),
            ("pageSize", page_size),
            ("serverName", server_name),
            ("serverVersion", server_version),
            ("instructions", instructions),
            ("maxMessageBytes", max_message_bytes),
        ):
            if value is not None:
                body[name] = value
        text = _json_arg(body, "the MCP options") if body else None
        self._runtime = runtime
        out = _new_out()
        with runtime._handle.use() as runtime_ptr:
            if on_message is None:
                runtime._check(lib.rcip_mcp_session_new(runtime_ptr, text, _NO_CALLBACK, None, _lib.USER_DATA_FREE_CALLBACK(), byref(out)))
            else:
                # Ordered delivery: a coroutine function would run as a task,
                # out of order, so it is refused.
                with _registering(_MessageEntry(on_message, runtime._state, "on_message", allow_async=False)) as key:
                    runtime._check(lib.rcip_mcp_session_new(runtime_ptr, text, _message_trampoline, key, _user_data_free, byref(out)))
        self._own(out.value or 0, lib.rcip_mcp_session_free, "MCP session")

    def receive(self, message: Union[str, bytes, Mapping[str, Any]]) -> None:
        """Passes one message from the client (one JSON-RPC message, a str,
        bytes or a dict). Replies go to ``on_message``; text that is not
        valid JSON-RPC is answered there with the standard error, never
        raised."""
        if isinstance(message, Mapping):
            data = json.dumps(message).encode("utf-8")
        elif isinstance(message, str):
            data = message.encode("utf-8")
        elif isinstance(message, bytes):
            data = message
        else:
            raise TypeError("rcip: an MCP message is a str, bytes or a dict")
        if b"\0" in data:
            # JSON text never holds a raw NUL; C would see a shorter text.
            data = data.replace(b"\0", b"\\u0000")
        with self._handle.use() as ptr:
            check(lib.rcip_mcp_session_receive(ptr, data))

    def serve_stdio(self) -> None:
        """Serves the MCP stdio transport: reads newline-delimited messages
        from the process's standard input until it ends, then closes the
        session. Blocks (without the GIL). Do not call it on the thread
        running the runtime's asyncio loop when callbacks are coroutines:
        use ``serve_stdio_async()``."""
        self._runtime._check_blocking("serve_stdio")
        with self._handle.use() as ptr:
            check(lib.rcip_mcp_session_serve_stdio(ptr))

    async def serve_stdio_async(self) -> None:
        """``serve_stdio()`` on a worker thread, awaited."""
        loop = _running_loop() or asyncio.get_event_loop()
        await loop.run_in_executor(None, self._serve_unchecked)

    def _serve_unchecked(self) -> None:
        with self._handle.use() as ptr:
            check(lib.rcip_mcp_session_serve_stdio(ptr))

    def __enter__(self) -> "McpSession":
        return self

    def __repr__(self) -> str:
        return "McpSession(closed=%r)" % (self.closed,)
