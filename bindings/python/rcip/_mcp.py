"""The MCP bridge: serve a runtime's capabilities to any Model Context
Protocol client (``rcip_mcp_session_*`` in include/rcip.h; docs/MCP.md has
the mapping)."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from ctypes import byref
from typing import Any, Callable, Dict, List, Literal, Mapping, Optional, Sequence, Union

from . import _lib
from ._handle import Owner, registry
from ._lib import lib
from ._runtime import (
    Runtime,
    _c_callback,
    _Entry,
    _FnEntry,
    _json_arg,
    _hand_over_runtime,
    _keep_forever,
    _new_out,
    _registering,
    _running_loop,
    _user_data_free,
)
from .errors import Result, check


class _MessageEntry(_FnEntry):
    """The session's message callback: called with each message's text, in
    order, one at a time."""


@_c_callback(_lib.MCP_MESSAGE_CALLBACK)
def _message_trampoline(key: Optional[int], text: Optional[bytes]) -> None:
    try:
        registry.get(key).fire((text or b"").decode("utf-8"))
    except BaseException:  # noqa: BLE001 - nothing may reach C
        pass


# The library may call it until the last session is freed, possibly late in
# interpreter shutdown: it is never deallocated.
_keep_forever(_message_trampoline)

_NO_CALLBACK = _lib.MCP_MESSAGE_CALLBACK()


class RequestSetup:
    """What a per-request runtime factory (``McpSession.set_request_runtimes``)
    is told about one stateless (MCP 2026-07-28) request: ``method``
    (``"tools/list"`` or ``"tools/call"``), ``meta`` (the request's whole
    ``params._meta`` dict: protocol version, client capabilities, client
    info, ...; self-reported by the client) and ``headers`` (a dict with
    lower-case names: those passed with ``receive(message, headers=...)``,
    empty otherwise). A plain copy, so keeping it is harmless."""

    __slots__ = ("method", "meta", "headers")

    def __init__(self, method: str, meta: Dict[str, Any], headers: Dict[str, str]) -> None:
        self.method = method
        self.meta = meta
        self.headers = headers

    def header(self, name: str) -> Optional[str]:
        """Header ``name`` (any case) passed with the request, or ``None``."""
        return self.headers.get(name.lower())

    def __repr__(self) -> str:
        return "RequestSetup(method=%r)" % (self.method,)


RequestFactory = Callable[[RequestSetup], Runtime]


class _RequestFactoryEntry(_Entry):
    def __init__(self, factory: RequestFactory) -> None:
        if not callable(factory):
            raise TypeError("rcip: the request factory must be callable")
        self.factory = factory
        self.errors: List[BaseException] = []


class _RequestEntry(_Entry):
    """A request's runtime as the library holds it: the Python object stays
    alive (its callbacks belong to it) until the request ended."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime


def _text(value: Optional[bytes]) -> str:
    return "" if value is None else value.decode("utf-8", "replace")


@_c_callback(_lib.MCP_REQUEST_FACTORY_CALLBACK)
def _request_factory_trampoline(key: Optional[int], setup: Optional[int]) -> int:
    entry: Optional[_RequestFactoryEntry] = None
    try:
        entry = registry.get(key)
        info = RequestSetup(
            _text(lib.rcip_mcp_request_setup_method(setup)),
            json.loads(_text(lib.rcip_mcp_request_setup_meta(setup)) or "{}"),
            json.loads(_text(lib.rcip_mcp_request_setup_headers(setup)) or "{}"),
        )
        # The runtime moves into the request: the library closes it when
        # the request ends, then releases the entry.
        return _hand_over_runtime(
            entry.factory(info), "request factory", _RequestEntry, lib.rcip_mcp_request_setup_accept, setup
        )
    except BaseException as exc:  # noqa: BLE001 - nothing may reach C
        try:
            if entry is not None:
                entry.errors.append(exc)
        except BaseException:  # noqa: BLE001
            pass
        return 1


# The library may call it until the last session is freed: never deallocated.
_keep_forever(_request_factory_trampoline)


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
    ``server_version``, ``instructions``, ``max_message_bytes``,
    ``workers`` (the threads that run tool calls, default 2, so a slow
    handler never delays a ``ping``; 0 runs everything inside
    ``receive()``, so every reply not waiting for a handler or the user is
    sent before it returns), ``tool_names`` (**rcip**: ``"ids"``, the
    default; ``"safe"``, every character outside ``[A-Za-z0-9_-]``
    replaced by ``_`` for clients that accept only
    ``^[a-zA-Z0-9_-]{1,64}$``; or ``{capability id: tool name}``; names
    that collide or are longer than 64 characters raise
    ``rcip.errors.InvalidArgumentError`` naming both ids), ``content`` (**rcip**:
    ``{capability id: [{"type": "json" | "text" | "image" | "audio" |
    "resource", "property": output property}]}``, which output
    properties become the content blocks of a succeeded result,
    docs/MCP.md "Content blocks"); or ``options`` as the JSON object
    itself.
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        on_message: Optional[Callable[[str], object]] = None,
        filter: Optional[Mapping[str, Any]] = None,
        confirmation: Optional[Literal["host", "elicit"]] = None,
        page_size: Optional[int] = None,
        server_name: Optional[str] = None,
        server_version: Optional[str] = None,
        instructions: Optional[str] = None,
        max_message_bytes: Optional[int] = None,
        workers: Optional[int] = None,
        tool_names: Optional[Union[Literal["ids", "safe"], Mapping[str, str]]] = None,
        content: Optional[Mapping[str, Sequence[Mapping[str, str]]]] = None,
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
            ("workers", workers),
            ("toolNames", tool_names),
            ("content", content),
        ):
            if value is not None:
                body[name] = value
        text = _json_arg(body, "the MCP options") if body else None
        self._runtime = runtime
        self._request_factory: Optional[_RequestFactoryEntry] = None
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

    def receive(
        self,
        message: Union[str, bytes, Mapping[str, Any]],
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        """Passes one message from the client (one JSON-RPC message, a str,
        bytes or a dict). Replies go to ``on_message``; text that is not
        valid JSON-RPC is answered there with the standard error, never
        raised. ``headers``: what a transport of the host's own received
        the message with (``{"Authorization": "Bearer ..."}``); a
        stateless request's factory reads them (``RequestSetup.headers``,
        names in lower case)."""
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
        if headers is None:
            with self._handle.use() as ptr:
                check(lib.rcip_mcp_session_receive(ptr, data))
            return
        if not isinstance(headers, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
        ):
            raise TypeError("rcip: headers is a mapping of str to str")
        text = _json_arg(dict(headers), "the headers")
        with self._handle.use() as ptr:
            check(lib.rcip_mcp_session_receive_with_headers(ptr, data, text))

    def set_request_runtimes(self, factory: RequestFactory) -> None:
        """Gives the session a per-request runtime factory (**rcip**): each
        stateless (MCP 2026-07-28) ``tools/list`` and ``tools/call`` then
        runs on the runtime ``factory(setup)`` returns (an
        ``rcip.Runtime`` built from the session's catalog, with its
        bindings, policy and context for this request; ``setup`` is a
        ``RequestSetup``), closed when the response is sent, so nothing of
        one request is seen by another. Served when the session option
        ``eras`` is ``"both"`` or ``"modern"``; legacy sessions keep the
        session's runtime. The factory runs on a session worker thread
        (inside ``receive()`` with ``workers=0``), possibly on several at
        once. Raising, or returning something else, answers the request
        with JSON-RPC ``-32603`` (the exception is kept in
        ``request_factory_errors``). Replaces an earlier factory."""
        entry = _RequestFactoryEntry(factory)
        with _registering(entry) as key, self._handle.use() as ptr:
            check(lib.rcip_mcp_session_set_request_runtimes(ptr, _request_factory_trampoline, key, _user_data_free))
        self._request_factory = entry

    @property
    def request_factory_errors(self) -> List[BaseException]:
        """Exceptions the current request factory raised (each answered a
        request with ``-32603``)."""
        entry = self._request_factory
        return list(entry.errors) if entry is not None else []

    def stats(self) -> Dict[str, int]:
        """The session's counters (**rcip**): ``{"inFlight",
        "droppedNotifications", "contentReplaced"}``; ``contentReplaced``
        counts content blocks replaced by a text note because an output
        property the ``content`` option names was not valid content (those
        results stay ``succeeded``)."""
        out = _new_out()
        with self._handle.use() as ptr:
            check(lib.rcip_mcp_session_stats(ptr, byref(out)))
        stats: Dict[str, int] = json.loads(_lib.take_string(out) or "{}")
        return stats

    def serve_stdio(self) -> None:
        """Serves the MCP stdio transport: reads newline-delimited messages
        from the process's standard input until it ends, then closes the
        session. Blocks until then, or until ``KeyboardInterrupt`` (Ctrl-C,
        SIGINT) reaches the calling thread: then the session is closed as
        at the end of input (calls in flight cancelled, nothing more sent)
        within a fraction of a second and the ``KeyboardInterrupt`` is
        raised again. Do not call it on the thread running the runtime's
        asyncio loop when callbacks are coroutines: use
        ``serve_stdio_async()``.

        How: the library's transport loop runs on a worker thread reading
        a pipe put in place of file descriptor 0, and a pump thread copies
        the real standard input into it, so an interrupt ends the loop by
        closing the pipe. Descriptor 0 is put back before this returns (a
        pump thread still blocked reading the real input then discards
        the one chunk it reads)."""
        self._runtime._check_blocking("serve_stdio")
        serving = _StdioServing.start(self)
        if serving is None:
            self._serve_closing()
            return
        try:
            serving.begin()
            while not serving.done.wait(0.05):
                pass
        except BaseException:
            serving.stop()
            raise
        finally:
            serving.finish()
            self.close()
        serving.raise_error()

    async def serve_stdio_async(self) -> None:
        """``serve_stdio()`` awaited: the transport runs on worker threads,
        the loop stays free. Cancelling the awaiting task (which
        ``asyncio.run`` does on Ctrl-C) closes the session the same way,
        then ``CancelledError`` propagates."""
        serving = _StdioServing.start(self)
        if serving is None:
            await asyncio.get_running_loop().run_in_executor(None, self._serve_closing)
            return
        try:
            serving.begin()
            while not serving.done.is_set():
                await asyncio.sleep(0.05)
        except BaseException:
            serving.stop()
            raise
        finally:
            serving.finish()
            self.close()
        serving.raise_error()

    def _serve_unchecked(self) -> None:
        with self._handle.use() as ptr:
            check(lib.rcip_mcp_session_serve_stdio(ptr))

    def _serve_closing(self) -> None:
        """Without a descriptor 0 to replace: the library's loop as it is."""
        try:
            self._serve_unchecked()
        finally:
            self.close()

    def __enter__(self) -> "McpSession":
        return self

    def __repr__(self) -> str:
        return "McpSession(closed=%r)" % (self.closed,)


class _StdioServing:
    """One ``serve_stdio`` run: the library's loop on a worker thread over a
    pipe on descriptor 0, fed by a pump thread from the real input."""

    @classmethod
    def start(cls, session: McpSession) -> Optional["_StdioServing"]:
        """None when descriptor 0 is not open (nothing to put a pipe in
        place of)."""
        try:
            os.fstat(0)
        except OSError:
            return None
        return cls(session)

    def __init__(self, session: McpSession) -> None:
        self.session = session
        self.done = threading.Event()
        self.error: Optional[BaseException] = None
        self._lock = threading.Lock()
        self._stopped = False
        self._finished = False
        self._restored = False
        self._restore_lock = threading.Lock()
        self._real_stdin = os.dup(0)
        read_end, self._write_end = os.pipe()
        os.dup2(read_end, 0)
        os.close(read_end)
        self._pump = threading.Thread(target=self._copy, name="rcip-mcp-stdin", daemon=True)
        self._worker = threading.Thread(target=self._serve, name="rcip-mcp-stdio", daemon=True)

    def begin(self) -> None:
        """Starts the pump and the library's loop. Called inside the
        caller's ``try``: the loop may answer before ``Thread.start``
        returns here, so an interrupt raised in it must still reach
        ``stop()`` and ``finish()``."""
        self._pump.start()
        self._worker.start()

    def _serve(self) -> None:
        try:
            self.session._serve_unchecked()
        except BaseException as exc:  # noqa: BLE001 - raised by the caller
            self.error = exc
        finally:
            self.done.set()

    def _copy(self) -> None:
        source = self._real_stdin
        try:
            while True:
                try:
                    chunk = os.read(source, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                with self._lock:
                    if self._stopped or self._write_end < 0:
                        break
                    try:
                        os.write(self._write_end, chunk)  # blocks while the pipe is full
                    except OSError:
                        break
        finally:
            with self._lock:
                if self._write_end >= 0:
                    _close_quietly(self._write_end)  # the end of input
                    self._write_end = -1
                finished = self._finished
            if finished:
                _close_quietly(source)

    def stop(self) -> None:
        """Ends the input: the library's loop reads the end and closes the
        session. (If the loop already returned by itself, descriptor 0 is
        put back first, so a pump blocked writing to the full pipe fails
        at once instead of holding the lock.)"""
        self._stopped = True
        if not self._worker.is_alive():
            self._restore()
        with self._lock:
            if self._write_end >= 0:
                _close_quietly(self._write_end)
                self._write_end = -1

    def finish(self) -> None:
        """Waits for the loop to return (if it started) and puts
        descriptor 0 back."""
        self.stop()
        if self._worker.ident is not None:
            self._worker.join()
        self._restore()

    def _restore(self) -> None:
        with self._restore_lock:
            if self._restored:
                return
            self._restored = True
            os.dup2(self._real_stdin, 0)
            with self._lock:
                self._finished = True
                pump_done = not self._pump.is_alive()
            if pump_done:
                _close_quietly(self._real_stdin)

    def raise_error(self) -> None:
        if self.error is not None:
            raise self.error


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass
