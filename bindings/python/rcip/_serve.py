"""How a declared application is served: ``ServeOptions``, the one
definition ``App.serve_stdio``, ``App.serve_http`` and ``python -m rcip
serve`` share (each CLI flag is generated from a field), and the asyncio
loop a server owns for coroutine handlers and policies."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, Literal, Mapping, Optional, Union

__all__ = ["ServeOptions"]

ToolNames = Union[Literal["ids", "safe"], Mapping[str, str]]


def _flag(flag: str, help: str, json_name: Optional[str], **argparse: Any) -> Dict[str, Any]:
    return {"flag": flag, "help": help, "json": json_name, "argparse": argparse}


@dataclass(frozen=True)
class ServeOptions:
    """How ``App.serve_stdio()``, ``App.serve_http()`` and ``python -m rcip
    serve`` serve an application. Every field defaults to "as the library
    does" (``None``); each has a ``serve`` flag, named below.

    - ``confirmation`` (``--confirm host|elicit``): ``"host"`` (the
      library's default) answers a call that needs confirmation with an
      error only the host can approve; ``"elicit"`` asks the MCP client's
      user through elicitation, and the approved call then runs.
    - ``tool_names`` (``--tool-names ids|safe``): the tool names, the
      capability ids or ids made safe for clients that accept only
      ``[A-Za-z0-9_-]`` (a ``{capability id: tool name}`` map in code or in
      ``--options``).
    - ``confirmation_ttl_ms`` (``--ttl-ms N``): how long a confirmation
      stays open (the runtime's default otherwise).
    - ``workers`` (``--workers N``): the threads that run tool calls.
    - ``server_name``, ``server_version``, ``instructions``
      (``--server-name``, ``--server-version``, ``--instructions``):
      what ``initialize`` answers; the application's id, version and
      description by default.
    - ``options`` (``--options FILE``, ``--options @FILE`` or ``--options
      JSON``): the session and server options of docs/MCP.md as one JSON
      object with their JSON names (``"allowedOrigins"``, ``"filter"``,
      ``"content"`` ...); the fields above win over the same keys there.
    """

    confirmation: Optional[Literal["host", "elicit"]] = field(
        default=None,
        metadata=_flag("--confirm", "who approves a call that needs confirmation: the host (default) or the MCP client's user through elicitation", "confirmation", choices=["host", "elicit"]),
    )
    tool_names: Optional[ToolNames] = field(
        default=None,
        metadata=_flag("--tool-names", "tool names: the capability ids (default) or safe names ([A-Za-z0-9_-] only)", "toolNames", choices=["ids", "safe"]),
    )
    confirmation_ttl_ms: Optional[int] = field(
        default=None, metadata=_flag("--ttl-ms", "how long a confirmation stays open, in milliseconds", None, type=int, metavar="N")
    )
    workers: Optional[int] = field(default=None, metadata=_flag("--workers", "threads that run tool calls (default 2)", "workers", type=int, metavar="N"))
    server_name: Optional[str] = field(default=None, metadata=_flag("--server-name", "the server name initialize answers", "serverName", metavar="NAME"))
    server_version: Optional[str] = field(
        default=None, metadata=_flag("--server-version", "the server version initialize answers", "serverVersion", metavar="VERSION")
    )
    instructions: Optional[str] = field(
        default=None, metadata=_flag("--instructions", "the instructions initialize answers", "instructions", metavar="TEXT")
    )
    options: Optional[Mapping[str, Any]] = field(
        default=None,
        metadata=_flag(
            "--options",
            "the full session and server options (docs/MCP.md) as JSON: a file, @file, or the JSON text itself",
            None,
            metavar="FILE",
        ),
    )

    def __post_init__(self) -> None:
        if self.confirmation not in (None, "host", "elicit"):
            raise ValueError("rcip: confirmation is 'host' or 'elicit', not %r" % (self.confirmation,))
        for name in ("confirmation_ttl_ms", "workers"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError("rcip: %s is a non-negative int, not %r" % (name, value))
        if self.options is not None and not isinstance(self.options, Mapping):
            raise TypeError("rcip: options is the JSON options object (a mapping)")

    @classmethod
    def coerce(cls, value: Union["ServeOptions", Mapping[str, Any], None]) -> "ServeOptions":
        """``ServeOptions`` as given, a mapping as the JSON ``options``, or
        the defaults."""
        if value is None:
            return cls()
        if isinstance(value, ServeOptions):
            return value
        if isinstance(value, Mapping):
            return cls(options=value)
        raise TypeError("rcip: serve options are rcip.ServeOptions or the JSON options mapping, not %s" % type(value).__name__)

    def session_json(self, defaults: Mapping[str, Optional[str]]) -> Dict[str, Any]:
        """The session (and server) options as JSON: ``options``, then every
        field that has a JSON name and a value, then ``defaults`` (the
        application's server name, version and instructions) for keys
        still unset."""
        body: Dict[str, Any] = dict(self.options or {})
        for f in dataclasses.fields(self):
            name = f.metadata.get("json")
            value = getattr(self, f.name)
            if name is not None and value is not None:
                body[name] = dict(value) if isinstance(value, Mapping) else value
        for name, value in defaults.items():
            if value is not None and name not in body:
                body[name] = value
        return body


def read_options_argument(text: str) -> Dict[str, Any]:
    """``--options``: ``@FILE`` or ``FILE`` (read), or JSON text (``{...}``)."""
    stripped = text.strip()
    if stripped.startswith("{"):
        source, data = "--options", stripped
    else:
        path = text[1:] if text.startswith("@") else text
        try:
            with open(path, "r", encoding="utf-8") as f:
                data = f.read()
        except OSError as exc:
            raise ValueError("--options %s: %s" % (path, exc.strerror or exc)) from None
        source = path
    try:
        value = json.loads(data)
    except ValueError as exc:
        raise ValueError("%s: not JSON: %s" % (source, exc)) from None
    if not isinstance(value, dict):
        raise ValueError("%s: the options are a JSON object" % source)
    return value


class OwnedLoop:
    """An asyncio loop on a thread of its own, for a server whose sessions
    run coroutine handlers or policies and whose caller runs no loop
    (``App.serve_http``). ``close()`` cancels what is left and stops it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rcip-serve-loop", daemon=True)
        self._thread.start()
        self._started.wait()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._started.set)
        try:
            self.loop.run_forever()
        finally:
            try:
                pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
                for task in pending:
                    task.cancel()
                if pending:
                    self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            finally:
                self.loop.close()

    def close(self) -> None:
        if self.loop.is_closed():
            return
        try:
            self.loop.call_soon_threadsafe(self.loop.stop)
        except RuntimeError:
            pass
        self._thread.join()
