"""``python -m rcip``: the catalog linter and the MCP server, from Python.

    python -m rcip check [--json] CATALOG.json...
    python -m rcip serve MODULE:APP        # MCP over stdio
    python -m rcip serve MODULE:APP --http [ADDR] [--confirm elicit] [--tool-names safe]
                         [--ttl-ms N] [--workers N] [--options FILE|@FILE|JSON] ...
    python -m rcip ids MODULE:APP [--name NAME]   # a Literal of the app's capability ids
    python -m rcip version

``check`` prints what the ``rcip check`` binary prints (one line per
problem, ``FILE: ok`` for a valid catalog; ``--json`` the report objects)
and exits 0 when every catalog is valid, 1 when any has a problem, 2 on a
usage or I/O error.

``serve`` imports ``MODULE`` (a module name importable from the current
directory, or a path to a ``.py`` file) and serves ``APP`` (an attribute
naming an ``rcip.App``, or a function returning one) to an MCP client over
stdio (or Streamable HTTP with ``--http``) until the input ends or Ctrl-C
(exit status 130). The other flags are ``rcip.ServeOptions``' fields.
Standard output carries the protocol only: log to standard error. A module
that cannot be imported, a target that is not an app and an app the
library refuses print one line on standard error and exit 2 (a handler
of one of the module's apps named instead of the app is refused without
being called, and the line names the module's apps). Ctrl-C exits 130
without a traceback, also while the module is still importing.

``ids`` loads the app as ``serve`` does (the same one-line errors) and
prints a module binding ``NAME`` (default ``CapabilityId``) to a
``typing.Literal`` of its capability ids, for ``rcip.Client[NAME]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import inspect
import json
import os
import re
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence

from ._app import App
from ._runtime import Catalog, abi_version, library_version
from ._schema import DeclarationError
from ._serve import ServeOptions, read_options_argument
from .errors import RcipError


def _check(files: Sequence[str], as_json: bool) -> int:
    reports = []
    any_problem = False
    for name in files:
        try:
            with open(name, "rb") as f:
                text = f.read()
        except OSError as exc:
            print("rcip check: %s: %s" % (name, exc.strerror or exc), file=sys.stderr)
            return 2
        report = Catalog.check(text)
        any_problem |= not report.ok
        if as_json:
            reports.append(
                {
                    "file": name,
                    "ok": report.ok,
                    "problems": [
                        dict({"pointer": p.pointer, "rule": p.rule, "message": p.message}, **({"id": p.id} if p.id is not None else {}))
                        for p in report.problems
                    ],
                }
            )
        elif report.ok:
            print("%s: ok" % name)
        else:
            for p in report.problems:
                at = p.pointer or "/"
                print("%s: %s%s: %s: %s" % (name, at, " (%s)" % p.id if p.id is not None else "", p.rule, p.message))
            n = len(report.problems)
            print("%s: %d problem%s" % (name, n, "" if n == 1 else "s"))
    if as_json:
        print(json.dumps(reports[0] if len(reports) == 1 else reports, separators=(",", ":")))
    return 1 if any_problem else 0


def load_app(target: str) -> App:
    """``MODULE:APP`` -> the ``App`` (``SystemExit`` with a one-line reason
    when it cannot be found, imported or built)."""
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise SystemExit("rcip serve: give MODULE:APP (e.g. myapp:app or path/to/file.py:app), not %r" % target)
    try:
        if module_name.endswith(".py") or os.sep in module_name:
            path = os.path.abspath(module_name)
            if not os.path.isfile(path):
                raise SystemExit("rcip serve: %s: no such file" % module_name)
            spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
            if spec is None or spec.loader is None:
                raise SystemExit("rcip serve: cannot load %s" % module_name)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
        else:
            if "" not in sys.path and os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.split(".")[0] == exc.name.split(".")[0]:
            raise SystemExit("rcip serve: no module named %r (a module importable from %s, or a path to a .py file)" % (module_name, os.getcwd())) from None
        raise SystemExit("rcip serve: importing %s: %s" % (module_name, _one_line(exc))) from None
    except DeclarationError as exc:
        raise SystemExit("rcip serve: %s refuses a declaration: %s" % (module_name, _one_line(exc))) from None
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - reported in one line
        raise SystemExit("rcip serve: importing %s raised %s: %s" % (module_name, type(exc).__name__, _one_line(exc))) from None
    value: object = module
    for part in attr.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise SystemExit("rcip serve: %s has no attribute %r" % (module_name, attr)) from None
    if not isinstance(value, App) and callable(value):
        owner = _handler_owner(module, value)
        if owner is not None:
            # Never called: a handler run as a factory would act (write, delete) for nothing.
            raise SystemExit("rcip serve: %s is the handler of capability %s, not an rcip.App%s" % (target, owner, _apps_hint(module_name, module)))
        if inspect.iscoroutinefunction(value) or inspect.isasyncgenfunction(value):
            raise SystemExit("rcip serve: %s is a coroutine function, not an rcip.App (or a plain function of no arguments returning one)%s" % (target, _apps_hint(module_name, module)))
        if not _takes_no_arguments(value):
            raise SystemExit("rcip serve: %s is a function that takes arguments, not an rcip.App (or a function of no arguments returning one)%s" % (target, _apps_hint(module_name, module)))
        try:
            value = value()
        except DeclarationError as exc:
            raise SystemExit("rcip serve: %s refuses a declaration: %s" % (target, _one_line(exc))) from None
        except Exception as exc:  # noqa: BLE001 - reported in one line
            raise SystemExit("rcip serve: %s() raised %s: %s" % (target, type(exc).__name__, _one_line(exc))) from None
        if not isinstance(value, App):
            if inspect.iscoroutine(value):
                value.close()  # never awaited: closed, so no RuntimeWarning adds lines
            raise SystemExit("rcip serve: %s() returned %s, not an rcip.App%s" % (target, _type_name(value), _apps_hint(module_name, module)))
    if not isinstance(value, App):
        raise SystemExit("rcip serve: %s is %s, not an rcip.App (or a function of no arguments returning one)%s" % (target, _type_name(value), _apps_hint(module_name, module)))
    try:
        value.catalog().close()
    except RcipError as exc:
        raise SystemExit("rcip serve: %s is not a valid catalog: %s" % (target, _one_line(exc))) from None
    return value


def _type_name(value: object) -> str:
    return "None" if value is None else type(value).__name__


def _handler_owner(module: object, fn: object) -> Optional[str]:
    """The id of the capability of one of the module's apps whose handler
    ``fn`` is, or ``None``."""
    for value in vars(module).values():
        if isinstance(value, App):
            for capability in value.capabilities:
                if capability.fn is fn:
                    return capability.id
    return None


def _apps_hint(module_name: str, module: object) -> str:
    """``" (its apps: m:app)"`` naming the module's ``App`` attributes, or
    ``""`` when it has none: the likely fix when a handler or another
    attribute was named instead of the app."""
    names = sorted(name for name, value in vars(module).items() if isinstance(value, App) and not name.startswith("_"))
    return " (its apps: %s)" % ", ".join("%s:%s" % (module_name, name) for name in names) if names else ""


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _takes_no_arguments(fn: Callable[..., object]) -> bool:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    return all(
        p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in signature.parameters.values()
    )


ADDRESS = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[^:\[\]]+):[0-9]+$")
DEFAULT_HTTP_ADDRESS = "127.0.0.1:8080"


def serve_options(args: argparse.Namespace) -> ServeOptions:
    """The ``ServeOptions`` the flags give (each flag is a field)."""
    values: Dict[str, Any] = {}
    for f in dataclasses.fields(ServeOptions):
        value = getattr(args, f.name, None)
        if value is None:
            continue
        if f.name == "options":
            try:
                value = read_options_argument(value)
            except ValueError as exc:
                raise SystemExit("rcip serve: %s" % exc) from None
        values[f.name] = value
    try:
        return ServeOptions(**values)
    except (TypeError, ValueError) as exc:
        raise SystemExit("rcip serve: %s" % _one_line(exc)) from None


def _serve_stdio(app: App, serve: ServeOptions, address: Optional[str]) -> None:
    app.serve_stdio(serve)


def _serve_http(app: App, serve: ServeOptions, address: Optional[str]) -> None:
    def listening(url: str) -> None:
        print("rcip: serving MCP on %s" % url, flush=True)

    app.serve_http(address or DEFAULT_HTTP_ADDRESS, serve, on_listening=listening)


def _serve(args: argparse.Namespace) -> int:
    http = args.http
    target = args.target
    if http is not None and target is None and not ADDRESS.match(http):
        # `serve --http MODULE:APP`: the bare flag, then the target.
        http, target = DEFAULT_HTTP_ADDRESS, http
    if target is None:
        raise SystemExit("rcip serve: give MODULE:APP (e.g. myapp:app or path/to/file.py:app)")
    if args.address is not None:
        if http is not None and http != DEFAULT_HTTP_ADDRESS and http != args.address:
            raise SystemExit("rcip serve: --http %s and --address %s disagree" % (http, args.address))
        http = args.address
    if http is not None and not ADDRESS.match(http):
        raise SystemExit("rcip serve: %r is not an address (IP:PORT, e.g. 127.0.0.1:8080)" % http)
    serve = serve_options(args)
    app = load_app(target)
    transport = _serve_http if http is not None else _serve_stdio
    try:
        transport(app, serve, http)
    except KeyboardInterrupt:
        return 130
    except RcipError as exc:
        raise SystemExit("rcip serve: %s" % _one_line(exc)) from None
    except DeclarationError as exc:
        raise SystemExit("rcip serve: %s refuses a declaration: %s" % (target, _one_line(exc))) from None
    return 0


IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def capability_ids_source(app: App, target: str, name: str = "CapabilityId") -> str:
    """The Python module ``python -m rcip ids`` prints: ``NAME`` bound to a
    ``typing.Literal`` of ``app``'s capability ids in declaration order,
    for ``rcip.Client[NAME]`` / ``rcip.Host[NAME]``. ``app`` declares at
    least one capability (``Literal[]`` is not a type)."""
    ids = [c.id for c in app.capabilities]
    lines = [
        '"""The capability ids of %s, written by `python -m rcip ids %s`:' % (target, target),
        'write it again when the app\'s capabilities change."""',
        "",
        "from typing import Literal",
        "",
    ]
    lines.append("%s = Literal[" % name)
    lines.extend("    %s," % json.dumps(i) for i in ids)
    lines.append("]")
    return "\n".join(lines) + "\n"


def _ids(args: argparse.Namespace) -> int:
    if not IDENTIFIER.match(args.name):
        raise SystemExit("rcip ids: --name %r is not a Python identifier" % args.name)
    try:
        app = load_app(args.target)
    except SystemExit as exc:
        if isinstance(exc.code, str) and exc.code.startswith("rcip serve: "):
            raise SystemExit("rcip ids: " + exc.code[len("rcip serve: ") :]) from None
        raise
    if not app.capabilities:
        raise SystemExit("rcip ids: %s declares no capability" % args.target)
    sys.stdout.write(capability_ids_source(app, args.target, args.name))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rcip", description="The RCIP capability runtime's command line.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    check = commands.add_parser("check", help="report every problem of each catalog file")
    check.add_argument("--json", action="store_true", help="print the reports as JSON")
    check.add_argument("files", nargs="+", metavar="CATALOG.json")
    serve = commands.add_parser("serve", help="serve a declared application over MCP")
    serve.add_argument("target", nargs="?", metavar="MODULE:APP", help="the module (name or .py path) and the rcip.App in it")
    serve.add_argument(
        "--http",
        metavar="ADDR",
        nargs="?",
        const=DEFAULT_HTTP_ADDRESS,
        default=None,
        help="serve over Streamable HTTP at ADDR (default %s) instead of stdio" % DEFAULT_HTTP_ADDRESS,
    )
    serve.add_argument("--address", metavar="ADDR", default=None, help="the HTTP address (IP:PORT; implies --http)")
    for f in dataclasses.fields(ServeOptions):
        serve.add_argument(f.metadata["flag"], dest=f.name, default=None, help=f.metadata["help"], **f.metadata["argparse"])
    ids = commands.add_parser("ids", help="print a typing.Literal of an app's capability ids (for rcip.Client[...])")
    ids.add_argument("target", metavar="MODULE:APP", help="the module (name or .py path) and the rcip.App in it")
    ids.add_argument("--name", default="CapabilityId", metavar="NAME", help="the alias's name (default CapabilityId)")
    commands.add_parser("version", help="print the library and ABI versions")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    handlers: Dict[str, Callable[[argparse.Namespace], int]] = {
        "check": lambda a: _check(a.files, a.json),
        "serve": _serve,
        "ids": _ids,
        "version": lambda a: (print("rcip %s (ABI %d)" % (library_version(), abi_version())), 0)[1],
    }
    if args.command is None:
        parser.print_usage(sys.stderr)
        return 2
    try:
        return handlers[args.command](args)
    except KeyboardInterrupt:
        return 130  # Ctrl-C before serving started (a slow import): no traceback either
    except SystemExit as exc:
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
