"""MCP over Streamable HTTP: serve a catalog to remote MCP clients, one
runtime per MCP session (``rcip_mcp_server_*`` in include/rcip.h;
docs/MCP.md, "Serving over HTTP")."""

from __future__ import annotations

import atexit
import collections
import json
import time
import weakref
from ctypes import byref
from typing import Any, Callable, Deque, Dict, List, Mapping, Optional, Union

from . import _lib
from ._handle import Handle, Owner, registry
from ._lib import lib, take_string
from ._runtime import (
    Catalog,
    Client,
    Host,
    Runtime,
    _c_callback,
    _Entry,
    _hand_over_runtime,
    _is_coroutine_function,
    _json_arg,
    _keep_forever,
    _new_out,
    _registering,
    _user_data_free,
)
from .errors import Result, check

class SessionSetup:
    """What the session factory is told about a new MCP session: its id,
    the client's ``initialize`` params, the request headers the server's
    ``forwardHeaders`` option names, and, when the server checks access
    tokens (the ``auth`` option), ``principal``: who the request acts for,
    ``{"issuer", "subject", "scopes", "claims", "expiresAt"}`` (``None``
    without authorization; the session stays bound to it). Valid during
    the factory call (it is a plain copy, so keeping it is harmless)."""

    __slots__ = ("session_id", "initialize_params", "client_name", "_headers", "principal")

    def __init__(
        self,
        session_id: str,
        initialize_params: Dict[str, Any],
        client_name: Optional[str],
        headers: Dict[str, str],
        principal: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.session_id = session_id
        self.initialize_params = initialize_params
        self.client_name = client_name
        self._headers = headers
        self.principal = principal

    def header(self, name: str) -> Optional[str]:
        """A forwarded header of the ``initialize`` request (any case), or ``None``."""
        return self._headers.get(name.lower())

    def __repr__(self) -> str:
        return "SessionSetup(session_id=%r, client_name=%r)" % (self.session_id, self.client_name)


SessionFactory = Callable[[SessionSetup], Runtime]


class _SessionEntry(_Entry):
    """A session's runtime as the library holds it: the Python object stays
    alive (its callbacks belong to it) until the session ends."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime


class _FactoryEntry(_Entry):
    def __init__(self, factory: SessionFactory, forward_headers: List[str]) -> None:
        if not callable(factory):
            raise TypeError("rcip: the session factory must be callable")
        self.factory = factory
        self.forward_headers = forward_headers
        self.errors: List[BaseException] = []


def _text(value: Optional[bytes]) -> Optional[str]:
    return None if value is None else value.decode("utf-8", "replace")


@_c_callback(_lib.MCP_SESSION_FACTORY_CALLBACK)
def _factory_trampoline(key: Optional[int], setup: Optional[int]) -> int:
    try:
        entry: _FactoryEntry = registry.get(key)
        headers: Dict[str, str] = {}
        for name in entry.forward_headers:
            value = _text(lib.rcip_mcp_session_setup_header(setup, name.encode("utf-8")))
            if value is not None:
                headers[name.lower()] = value
        info = SessionSetup(
            _text(lib.rcip_mcp_session_setup_session_id(setup)) or "",
            json.loads(_text(lib.rcip_mcp_session_setup_initialize_params(setup)) or "null") or {},
            _text(lib.rcip_mcp_session_setup_client_name(setup)),
            headers,
            json.loads(_text(lib.rcip_mcp_session_setup_principal(setup)) or "null"),
        )
        # The runtime moves into the session: the library closes and frees
        # it when the session ends; the Python object stays usable for its
        # callbacks, and the host reaches it again through
        # McpHttpServer.session(id).
        return _hand_over_runtime(
            entry.factory(info), "session factory", _SessionEntry, lib.rcip_mcp_session_setup_accept, setup
        )
    except BaseException as exc:  # noqa: BLE001 - nothing may reach C
        try:
            entry.errors.append(exc)
        except BaseException:  # noqa: BLE001
            pass
        return 1


# The library may call it until the server is freed: never deallocated.
_keep_forever(_factory_trampoline)


class TokenRefused(Exception):
    """Raised by a token verifier (``McpHttpServer(token_verifier=...)``):
    the token is not valid for this server (unknown, revoked, another
    audience). The client gets ``401`` ``invalid_token``; the message is the
    challenge's ``error_description`` (cut to 256 bytes, quotes and
    control characters replaced), so keep secrets out of it."""


TokenVerifier = Callable[[str], Optional[Mapping[str, Any]]]


class _VerifierEntry(_Entry):
    def __init__(self, fn: TokenVerifier) -> None:
        if not callable(fn):
            raise TypeError("rcip: the token verifier must be callable")
        if _is_coroutine_function(fn):
            raise TypeError("rcip: the token verifier answers at once; it cannot be a coroutine function")
        self.fn = fn
        self.errors: Deque[BaseException] = collections.deque(maxlen=100)


@_c_callback(_lib.MCP_TOKEN_CALLBACK)
def _token_trampoline(key: Optional[int], token: Optional[bytes], answer: Optional[int]) -> int:
    # 0 admitted (the principal in the answer), 1 refused, 2 unavailable
    # (rcip_mcp_token_callback).
    try:
        entry: _VerifierEntry = registry.get(key)
        try:
            principal = entry.fn((token or b"").decode("utf-8", "replace"))
            if principal is None:
                return 1
            if not isinstance(principal, Mapping):
                raise TypeError("rcip: a token verifier returns the principal (a mapping) or None, not %s" % type(principal).__name__)
            text = json.dumps(dict(principal), allow_nan=False)
        except TokenRefused as exc:
            why = str(exc)
            if why:
                lib.rcip_string_sink_set(answer, why.encode("utf-8", "replace"))
            return 1
        except BaseException as exc:  # noqa: BLE001 - nothing may reach C
            entry.errors.append(exc)
            return 2
        return 0 if lib.rcip_string_sink_set(answer, text.encode("utf-8", "replace")) == 0 else 2
    except BaseException:  # noqa: BLE001
        return 2


_keep_forever(_token_trampoline)


class SessionRuntime(Runtime):
    """A live MCP session's runtime, reached by the host
    (``McpHttpServer.session(id)``): ``host`` and ``client`` as on any
    runtime. It holds the session's runtime memory: after the session
    ends, calls on it raise ``ValueError`` (the runtime is closed). Close
    it when done; closing it does not end the session."""

    def __init__(self, handle_ptr: int, runtime_ptr: int, owner: Runtime) -> None:  # noqa: D107
        self._state = owner._state
        self._handle = Handle(runtime_ptr, lambda _ptr: lib.rcip_mcp_server_session_free(handle_ptr), "MCP session runtime")
        self._finalizer = weakref.finalize(self, self._handle.close)
        self._client_ptr = lib.rcip_mcp_server_session_client(handle_ptr)
        self._host_ptr = lib.rcip_mcp_server_session_host(handle_ptr)
        self.client = Client(self)
        self.host = Host(self)


_live_servers: "weakref.WeakSet[McpHttpServer]" = weakref.WeakSet()


class McpHttpServer(Owner):
    """An MCP server over Streamable HTTP for ``catalog``: ``factory(setup)``
    builds each MCP session's runtime (``rcip.Runtime(catalog, ...)`` with
    its bindings, policy and context) and returns it; the session then
    owns it. The factory runs on a library worker thread, possibly on two
    at once; raising (or returning something else) fails the client's
    ``initialize`` with JSON-RPC ``-32603``.

    ``address``: ``"IP:PORT"`` (default ``127.0.0.1:0``: loopback, a free
    port; ``url`` tells which). ``options``: the server options of
    docs/MCP.md, with their JSON names (``"allowedOrigins"``,
    ``"idleTimeoutMs"``, ``"toolNames"``, the session options ...).

    ``token_verifier``: for opaque access tokens (RFC 7662 introspection,
    the host's own session store), ``fn(token) -> principal``: return
    ``{"issuer", "subject", "scopes"?, "claims"?, "expiresAt"?}`` (seconds
    since the epoch) to admit the request, ``None`` or raise
    :class:`TokenRefused` to refuse it (``401``); any other exception
    answers ``503`` and is kept in :attr:`token_verifier_errors`. It needs
    the ``auth`` option (``"verifier": true`` is added for it); it runs on
    the server's control thread, one check at a time, and each result is
    remembered until ``expiresAt`` (at most an hour) or for 60 seconds
    (docs/MCP.md, "Authorization").

    ``start()`` serves in the background; ``serve()`` blocks until
    ``shutdown()`` or Ctrl-C. ``shutdown()`` ends every session (their
    runtimes closed, pending calls ``EXECUTION_ABORTED``). ``close()`` (or
    leaving a ``with`` block) shuts down and frees the server.
    """

    def __init__(
        self,
        catalog: Union[Catalog, str, bytes, Mapping[str, Any]],
        factory: SessionFactory,
        address: str = "127.0.0.1:0",
        *,
        options: Optional[Mapping[str, Any]] = None,
        token_verifier: Optional[TokenVerifier] = None,
    ) -> None:
        cat: Catalog = catalog if isinstance(catalog, Catalog) else Catalog(catalog)
        self._verifier: Optional[_VerifierEntry] = None
        if token_verifier is not None:
            auth = (options or {}).get("auth")
            if not isinstance(auth, Mapping):
                raise TypeError("rcip: a token verifier needs the \"auth\" option (docs/MCP.md, \"Authorization\")")
            if "verifier" not in auth:
                options = dict(options or {}, auth=dict(auth, verifier=True))
            verifier_entry = _VerifierEntry(token_verifier)
        #: The server's compiled catalog: build each session's runtime from
        #: it (``rcip.Runtime(server.catalog)``), so no session compiles
        #: schemas again.
        self.catalog = cat
        forward = [str(h) for h in (options or {}).get("forwardHeaders", [])]
        self._entry = _FactoryEntry(factory, forward)
        text = _json_arg(dict(options), "the server options") if options else None
        out = _new_out()
        with _registering(self._entry) as key, cat._handle.use() as cat_ptr:
            check(
                lib.rcip_mcp_server_new(
                    cat_ptr, address.encode("utf-8"), text, _factory_trampoline, key, _user_data_free, byref(out)
                )
            )
        self._own(out.value or 0, lib.rcip_mcp_server_free, "MCP HTTP server")
        url = _new_out()
        with self._handle.use() as ptr:
            check(lib.rcip_mcp_server_url(ptr, byref(url)))
        self.url: str = take_string(url) or ""
        _live_servers.add(self)
        if token_verifier is not None:
            self._set_verifier(verifier_entry)

    def set_token_verifier(self, verifier: TokenVerifier) -> None:
        """Gives (or replaces) the check of opaque access tokens (see the
        class: ``token_verifier``), for a server whose ``auth`` option says
        ``"verifier": true``; what the previous one admitted is forgotten.
        Raises ``InvalidArgumentError`` when the server has no ``auth`` or
        validates JWTs."""
        self._set_verifier(_VerifierEntry(verifier))

    def _set_verifier(self, entry: _VerifierEntry) -> None:
        with _registering(entry) as key, self._handle.use() as ptr:
            check(lib.rcip_mcp_server_set_token_verifier(ptr, _token_trampoline, key, _user_data_free))
        self._verifier = entry

    @property
    def token_verifier_errors(self) -> List[BaseException]:
        """The last 100 exceptions the token verifier raised (other than
        :class:`TokenRefused`; each answered a request ``503``)."""
        return list(self._verifier.errors) if self._verifier is not None else []

    @property
    def factory_errors(self) -> List[BaseException]:
        """Exceptions the factory raised (each failed an ``initialize``)."""
        return list(self._entry.errors)

    def start(self) -> "McpHttpServer":
        """Serves in the background (the library's own threads) and
        returns at once."""
        with self._handle.use() as ptr:
            check(lib.rcip_mcp_server_start(ptr))
        self._started = True
        return self

    def serve(self) -> None:
        """Serves until ``shutdown()`` from another thread, or until
        ``KeyboardInterrupt`` (Ctrl-C) reaches this thread: then the server
        shuts down (sessions ended, connections closed) and the interrupt is
        raised again. Starts the server first unless it was started."""
        if not getattr(self, "_started", False):
            self.start()
        try:
            while not self.closed and self._running():
                time.sleep(0.05)
        except BaseException:
            self.shutdown()
            raise

    def _running(self) -> bool:
        return not getattr(self, "_stopped", False)

    def shutdown(self, deadline_ms: int = 5000) -> None:
        """No new connections or sessions; every session ends; open
        connections get ``deadline_ms`` to finish. Idempotent."""
        self._stopped = True
        with self._handle.use() as ptr:
            check(lib.rcip_mcp_server_shutdown(ptr, int(deadline_ms)))

    def drain(self, deadline_ms: int = 30000) -> None:
        """Drains, then shuts down (what SIGTERM should do): readiness fails,
        new sessions and stateless requests get ``503`` with
        ``Retry-After``, the requests being answered get ``deadline_ms`` to
        finish, then :meth:`shutdown` with what is left. Blocks until the
        server stopped, without holding the GIL."""
        self._stopped = True
        with self._handle.use() as ptr:
            check(lib.rcip_mcp_server_drain(ptr, int(deadline_ms)))

    def sessions(self) -> List[Dict[str, Any]]:
        """The live sessions: ``[{"sessionId", "clientInfo",
        "protocolVersion", "droppedNotifications", "contentReplaced"}]``
        (``contentReplaced``: content blocks replaced by a text note,
        **rcip**, docs/MCP.md "Content blocks")."""
        out = _new_out()
        with self._handle.use() as ptr:
            check(lib.rcip_mcp_server_sessions(ptr, byref(out)))
        sessions: List[Dict[str, Any]] = json.loads(take_string(out) or "[]")
        return sessions

    def session(self, session_id: str) -> Optional[SessionRuntime]:
        """Session ``session_id``'s runtime (for an approval UI or a context
        change), or ``None`` when no live session has that id."""
        out = _new_out()
        with self._handle.use() as ptr:
            rc = lib.rcip_mcp_server_session_find(ptr, session_id.encode("utf-8"), byref(out))
        if rc == Result.NOT_FOUND:
            return None
        check(rc)
        handle = out.value or 0
        entry = registry.get(lib.rcip_mcp_server_session_user_data(handle))
        runtime_ptr = lib.rcip_mcp_server_session_client(handle)  # the runtime's own address
        return SessionRuntime(handle, runtime_ptr or 0, entry.runtime)

    def close(self) -> None:
        """Shuts the server down and frees it (and the catalog it made)."""
        super().close()

    def __repr__(self) -> str:
        return "McpHttpServer(url=%r, closed=%r)" % (self.url, self.closed)


def _shutdown_servers_at_exit() -> None:
    for server in list(_live_servers):
        try:
            server.close()
        except BaseException:  # noqa: BLE001 - exiting anyway
            pass


atexit.register(_shutdown_servers_at_exit)
