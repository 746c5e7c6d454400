"""``python -m rcip``: the catalog linter and the MCP server, from Python.

    python -m rcip check [--json] CATALOG.json...
    python -m rcip serve MODULE:APP        # MCP over stdio
    python -m rcip version

``check`` prints what the ``rcip check`` binary prints (one line per
problem, ``FILE: ok`` for a valid catalog; ``--json`` the report objects)
and exits 0 when every catalog is valid, 1 when any has a problem, 2 on a
usage or I/O error.

``serve`` imports ``MODULE`` (a module name importable from the current
directory, or a path to a ``.py`` file) and serves ``APP`` (an attribute
naming an ``rcip.App``, or a function returning one) to an MCP client over
stdio until the input ends or Ctrl-C (exit status 130). Standard output
carries the protocol only: log to standard error.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
from typing import Callable, Dict, List, Optional, Sequence

from ._app import App
from ._runtime import Catalog, abi_version, library_version


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
    """``MODULE:APP`` -> the ``App`` (``SystemExit`` with the reason when
    it cannot be found)."""
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise SystemExit("rcip serve: give MODULE:APP (e.g. myapp:app or path/to/file.py:app), not %r" % target)
    if module_name.endswith(".py") or os.sep in module_name:
        path = os.path.abspath(module_name)
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
    value = module
    for part in attr.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise SystemExit("rcip serve: %s has no attribute %r" % (module_name, attr)) from None
    if not isinstance(value, App) and callable(value):
        value = value()
    if not isinstance(value, App):
        raise SystemExit("rcip serve: %s is %s, not an rcip.App" % (target, type(value).__name__))
    return value


def _serve_stdio(app: App, args: argparse.Namespace) -> None:
    app.serve_stdio()


def _serve_http(app: App, args: argparse.Namespace) -> None:
    def listening(url: str) -> None:
        print("rcip: serving MCP on %s" % url, flush=True)

    app.serve_http(args.http, on_listening=listening)


def _transport(args: argparse.Namespace) -> Callable[[App, argparse.Namespace], None]:
    """The one place a transport is chosen from the options."""
    return _serve_http if args.http is not None else _serve_stdio


def _serve(args: argparse.Namespace) -> int:
    app = load_app(args.target)
    serve = _transport(args)
    try:
        serve(app, args)
    except KeyboardInterrupt:
        return 130
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rcip", description="The RCIP capability runtime's command line.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    check = commands.add_parser("check", help="report every problem of each catalog file")
    check.add_argument("--json", action="store_true", help="print the reports as JSON")
    check.add_argument("files", nargs="+", metavar="CATALOG.json")
    serve = commands.add_parser("serve", help="serve a declared application over MCP")
    serve.add_argument("target", metavar="MODULE:APP", help="the module (name or .py path) and the rcip.App in it")
    serve.add_argument("--http", metavar="ADDR", default=None, help="serve over Streamable HTTP at ADDR instead of stdio")
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
        "version": lambda a: (print("rcip %s (ABI %d)" % (library_version(), abi_version())), 0)[1],
    }
    if args.command is None:
        parser.print_usage(sys.stderr)
        return 2
    try:
        return handlers[args.command](args)
    except SystemExit as exc:
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
