"""The examples shipped with the binding run as documented."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import HERE


def test_quickstart_runs():
    script = os.path.join(HERE, "..", "examples", "quickstart.py")
    env = dict(os.environ)
    if env.get("RCIP_TEST_INSTALLED") != "1":  # else the installed package
        env["PYTHONPATH"] = os.path.join(HERE, "..")
    proc = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    out = proc.stdout
    assert "good input  -> succeeded {'text': 'hello, Ada'}" in out
    assert "bad input   -> failed INPUT_INVALID ['/name']" in out
    assert "after unbind -> CAPABILITY_UNBOUND" in out
    assert "raising     -> EXECUTION_FAILED" in out
    assert "asyncio     -> succeeded" in out


def readme_example(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start = text.index("```python\n") + len("```python\n")
    return text[start : text.index("```", start)]


def test_the_binding_readme_example_runs_as_shown():
    from conftest import ROOT

    code = readme_example(os.path.join(ROOT, "bindings", "python", "README.md"))
    env = dict(os.environ)
    if env.get("RCIP_TEST_INSTALLED") != "1":
        env["PYTHONPATH"] = os.path.join(HERE, "..")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "{'id': 1, 'title': 'Printer jam', 'priority': 'low'}\nsucceeded\n"
