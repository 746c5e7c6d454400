"""The Python client snippet of docs/MCP.md ("Connecting a remote MCP
client") is run as written (only its URL replaced by the desk's) with the
pinned `mcp` package, against the desk serving sessions only and serving
both eras, so the documented API cannot go stale again."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest
from conftest import REPO

DOC = REPO / "docs" / "MCP.md"


def snippet() -> str:
    text = DOC.read_text()
    section = text[text.index("### Connecting a remote MCP client") :]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "docs/MCP.md has no Python snippet under 'Connecting a remote MCP client'"
    code = found.group(1)
    assert "http://127.0.0.1:8080/mcp" in code
    return code


@pytest.mark.parametrize(("eras", "version"), [("legacy", "2025-11-25"), ("both", "2026-07-28")])
def test_the_documented_client_snippet_runs(eras: str, version: str, http_desk: Any) -> None:
    server = http_desk("--mcp-options", json.dumps({"eras": eras}))
    code = snippet().replace("http://127.0.0.1:8080/mcp", server.url)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith(f"{version} ['board.listOpenVisits', 'visits.search'"), lines
    assert lines[1].startswith("succeeded "), lines
