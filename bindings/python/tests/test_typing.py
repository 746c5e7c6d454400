"""Honest types: the package and a module using every public API pass
``mypy --strict`` (``assert_type`` there fails when an annotation regresses,
to ``Any`` included), that module also runs, and no public signature takes
or returns a bare ``Any`` except the JSON payloads listed below."""

from __future__ import annotations

import importlib.util
import inspect
import os
import subprocess
import sys
import typing
from typing import Any, Callable, List, Tuple

import pytest
from conftest import HERE

import rcip

PACKAGE = os.path.dirname(os.path.abspath(rcip.__file__))

# Payloads are the host's own JSON shapes (the catalog's schemas describe
# them): these stay Any, on purpose.
JSON_PAYLOADS = {
    ("Client.submit", "input"),
    ("Client.invoke", "input"),
    ("Client.invoke_async", "input"),
    ("ConfirmationNotice.__init__", "input"),
    ("Host.resume_confirmation", "input"),
    ("Host.submit_resumed_confirmation", "input"),
    ("Invocation.input", "return"),
    ("Invocation.complete", "output"),
    ("Invocation.log", "data"),
    ("Outcome.__init__", "output"),
    ("PolicyRequest.input", "return"),
    ("Proposal.__init__", "input"),
    ("Schema.validate", "instance"),
}


def mypy_available() -> bool:
    return importlib.util.find_spec("mypy") is not None


needs_mypy = pytest.mark.skipif(
    not mypy_available() and os.environ.get("RCIP_REQUIRE_MYPY") != "1", reason="mypy is not installed (make test-python installs it)"
)


def mypy(*args: str) -> "subprocess.CompletedProcess[str]":
    """``mypy --strict ARGS`` seeing the package under test: the installed
    one (found like any typed package) or the source tree (MYPYPATH)."""
    env = dict(os.environ)
    if os.environ.get("RCIP_TEST_INSTALLED") != "1":
        env["MYPYPATH"] = os.path.dirname(PACKAGE)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=HERE,
    )


@needs_mypy
def test_mypy_strict_passes_on_the_package_and_on_every_public_api():
    package = mypy("-p", "rcip")
    assert package.returncode == 0, package.stdout + package.stderr
    api = mypy(os.path.join(HERE, "typecheck_api.py"))
    assert api.returncode == 0, api.stdout + api.stderr


@needs_mypy
def test_the_check_fails_when_an_annotation_is_any(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import Any\n"
        "from typing_extensions import assert_type\n"
        "import rcip\n"
        "def loose() -> Any: ...\n"
        "assert_type(loose(), rcip.Outcome)\n"
    )
    proc = mypy(str(probe))
    assert proc.returncode == 1 and 'Expression is of type "Any", not "Outcome"' in proc.stdout


def test_the_typed_module_runs():
    spec = importlib.util.spec_from_file_location("typecheck_api", os.path.join(HERE, "typecheck_api.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules["typecheck_api"] = module
    try:
        spec.loader.exec_module(module)
        module.exercise()
    finally:
        del sys.modules["typecheck_api"]


def public_functions() -> List[Tuple[str, Callable[..., Any]]]:
    found = []
    for name in rcip.__all__:
        obj = getattr(rcip, name)
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_") and attr not in ("__init__", "__enter__", "__aenter__", "__call__"):
                    continue
                fn = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
                if callable(fn) and hasattr(fn, "__code__"):
                    found.append(("%s.%s" % (name, attr), fn))
        elif inspect.isfunction(obj):
            found.append((name, obj))
    return found


def test_no_public_signature_takes_or_returns_a_bare_any_but_the_payloads():
    loose = []
    functions = public_functions()
    assert len(functions) > 100
    for qualname, fn in functions:
        for parameter, annotation in typing.get_type_hints(fn).items():
            if annotation is Any and (qualname, parameter) not in JSON_PAYLOADS:
                loose.append((qualname, parameter))
    assert loose == []


def test_enter_returns_the_object_and_enums_are_enums():
    hints = typing.get_type_hints(rcip.Runtime.__enter__)
    assert hints["return"] is not Any
    assert issubclass(rcip.Phase, str) and rcip.Phase("started") is rcip.Phase.STARTED
    assert typing.get_type_hints(rcip.Event)["phase"] is rcip.Phase
    assert typing.get_type_hints(rcip.Outcome)["status"] is rcip.Status
    assert typing.get_args(rcip.DecisionName) == ("allow", "deny", "confirm")


def readme_python_blocks(path: str) -> List[str]:
    """Every ```python block of a README, dedented (a block inside a list
    item is indented)."""
    import textwrap

    blocks: List[str] = []
    current: List[str] = []
    inside = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            stripped = line.strip()
            if not inside and stripped == "```python":
                inside, current = True, []
            elif inside and stripped == "```":
                inside = False
                blocks.append(textwrap.dedent("".join(current)))
            elif inside:
                current.append(line)
    return blocks


@needs_mypy
def test_the_readme_examples_pass_mypy_strict(tmp_path):
    from conftest import ROOT

    blocks = readme_python_blocks(os.path.join(ROOT, "bindings", "python", "README.md"))
    assert len(blocks) >= 5
    files = []
    for n, code in enumerate(blocks):
        path = tmp_path / ("readme_example_%d.py" % n)
        path.write_text(code)
        files.append(str(path))
    checked = mypy(*files)
    assert checked.returncode == 0, checked.stdout + checked.stderr


@needs_mypy
def test_app_runtime_keywords_are_checked_statically(tmp_path):
    """``App.runtime(**options)`` is typed by ``rcip.RuntimeOptions``: a
    keyword ``Runtime`` takes passes with its own type, an unknown keyword
    or a wrong type is a mypy error (so the forwarding cannot loosen to
    ``**Any`` unnoticed)."""
    probe = tmp_path / "runtime_keywords.py"
    probe.write_text(
        "import rcip\n"
        "app = rcip.App('probe', name='Probe', description='Probes.')\n"
        "def seen(progress: rcip.Progress) -> None: ...\n"
        "app.runtime(on_progress=seen, confirmation_ttl_ms=1000, max_issues=10)\n"
        "app.runtime(on_progres=seen)\n"
        "app.runtime(confirmation_ttl_ms='soon')\n"
    )
    proc = mypy(str(probe))
    assert proc.returncode == 1, proc.stdout
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 2, proc.stdout
    assert ':5: error: Unexpected keyword argument "on_progres"' in errors[0], proc.stdout
    assert ":6: error:" in errors[1] and '"confirmation_ttl_ms"' in errors[1], proc.stdout


TICKETS_APP = '''
import rcip

app = rcip.App("tickets", name="Tickets", description="A ticket tracker.")


@app.capability(effect="read")
def search(query: str) -> None:
    """Search tickets

    Finds tickets."""


@app.capability(id="tickets.close", effect="write")
def close(ticket_id: int) -> None:
    """Close a ticket

    Closes one ticket."""
'''

IDS_PROBE = '''
import rcip
from tickets import app
from tickets_ids import TicketId

with app.runtime() as runtime:
    client: rcip.Client[TicketId] = runtime.client
    host: rcip.Host[TicketId] = runtime.host
    print(client.invoke("search", {"query": "jam"}).status)
    misspelt = client.invoke("tickets.serch", {})
    print(misspelt.error.code if misspelt.error else None)
    try:
        host.bind("tickets.clos", lambda invocation: None)
    except rcip.NotInCatalogError as exc:
        print(type(exc).__name__)
    anything = runtime.client.invoke("whatever", {})  # the bare client takes any id
'''


def test_capability_ids_are_checked_statically_with_the_generated_literal(tmp_path):
    """``python -m rcip ids`` writes a ``Literal`` of the app's ids in
    declaration order; ``Client[ThatLiteral]`` and ``Host[ThatLiteral]``
    make a misspelt id a mypy error while ``runtime.client`` stays
    ``Client[str]``, and the typed views run unchanged."""
    (tmp_path / "tickets.py").write_text(TICKETS_APP)
    env = dict(os.environ)
    if os.environ.get("RCIP_TEST_INSTALLED") != "1":
        env["PYTHONPATH"] = os.path.dirname(PACKAGE)
    ids = subprocess.run(
        [sys.executable, "-m", "rcip", "ids", "tickets:app", "--name", "TicketId"],
        capture_output=True, text=True, timeout=60, env=env, cwd=str(tmp_path),
    )
    assert ids.returncode == 0 and ids.stderr == "", ids.stderr
    assert 'TicketId = Literal[\n    "search",\n    "tickets.close",\n]\n' in ids.stdout, ids.stdout
    (tmp_path / "tickets_ids.py").write_text(ids.stdout)
    (tmp_path / "probe.py").write_text(IDS_PROBE)
    ran = subprocess.run([sys.executable, "probe.py"], capture_output=True, text=True, timeout=60, env=env, cwd=str(tmp_path))
    assert ran.returncode == 0 and ran.stdout == "succeeded\nCAPABILITY_NOT_FOUND\nNotInCatalogError\n", ran.stdout + ran.stderr
    if not mypy_available():
        if os.environ.get("RCIP_REQUIRE_MYPY") == "1":
            raise AssertionError("mypy is not installed")
        pytest.skip("mypy is not installed")
    env_mypy = dict(os.environ)
    path = [str(tmp_path)] + ([os.path.dirname(PACKAGE)] if os.environ.get("RCIP_TEST_INSTALLED") != "1" else [])
    env_mypy["MYPYPATH"] = os.pathsep.join(path)
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull, "probe.py"],
        capture_output=True, text=True, timeout=300, env=env_mypy, cwd=str(tmp_path),
    )
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert checked.returncode == 1 and len(errors) == 2, checked.stdout
    assert "probe.py:10: error:" in errors[0] and "\"Literal['tickets.serch']\"" in errors[0], checked.stdout
    assert "probe.py:13: error:" in errors[1] and "\"Literal['tickets.clos']\"" in errors[1], checked.stdout
