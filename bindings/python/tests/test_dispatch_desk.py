"""The Python dispatch desk runs the C demo's catalog and plan and prints
the same outcome codes (compared with the C host when RCIP_C_DEMO names its
binary, as `make test-python` does)."""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys

import pytest
from conftest import HERE, ROOT

DEMO = os.path.join(HERE, "..", "examples", "dispatch_desk.py")
CATALOG = os.path.join(ROOT, "examples-c", "dispatch", "catalog.json")
PLAN = os.path.join(ROOT, "examples-c", "dispatch", "plan.jsonl")

pytestmark = [
    pytest.mark.skipif(not os.path.exists(PLAN), reason="the C demo's plan is not in this tree"),
    pytest.mark.skipif(sys.version_info < (3, 10), reason="the desk example needs Python 3.10 (kw_only)"),
]


def run(cmd, *extra):
    proc = subprocess.run(list(cmd) + ["--json", "--catalog", CATALOG, "--plan", PLAN, *extra], capture_output=True, text=True, timeout=120)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return proc, lines


def codes(lines):
    """Per step: the outcome and report codes, the check verdicts and the
    result names, each as a multiset (worker threads may interleave)."""
    per_step = collections.defaultdict(collections.Counter)
    current = None
    for line in lines:
        kind = line["type"]
        if kind == "step":
            current = line["step"]
        elif kind == "outcome":
            o = line["outcome"]
            per_step[line["step"]][("outcome", line["source"], o["status"], (o.get("error") or {}).get("code"))] += 1
        elif kind == "report":
            r = line["report"]
            per_step[line["step"]][("report", r["consistent"], tuple((o["status"], (o.get("error") or {}).get("code")) for o in r["outcomes"]))] += 1
        elif kind == "check":
            per_step[line["step"]][("check", line["ok"], line["expected"], line["got"])] += 1
        elif kind == "result":
            per_step[line["step"]][("result", line["call"], line["result"])] += 1
        elif kind == "event":
            e = line["event"]
            per_step[current][("event", e["capabilityId"], e["phase"], e.get("errorCode"))] += 1
        elif kind == "snapshot":
            per_step[line["step"]][("snapshot", line["shared"], json.dumps(line["capabilities"], sort_keys=True))] += 1
        elif kind == "list":
            per_step[line["step"]][("list", tuple(line["ids"]))] += 1
    return dict(per_step)


def test_python_demo_meets_every_expectation_of_the_plan():
    proc, lines = run([sys.executable, DEMO])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stderr == ""
    summary = lines[-1]
    assert summary["type"] == "summary" and summary["mismatches"] == 0
    checks = [line for line in lines if line["type"] == "check"]
    assert len(checks) >= 30 and all(c["ok"] for c in checks)
    assert summary["stats"]["pendingInvocations"] == 0


def test_python_demo_text_transcript():
    proc = subprocess.run([sys.executable, DEMO, "--catalog", CATALOG, "--plan", PLAN], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "all " in proc.stdout and "steps went as the plan expected" in proc.stdout
    assert "MISMATCH" not in proc.stdout


def test_python_demo_rejects_a_bad_plan(tmp_path):
    bad = tmp_path / "plan.jsonl"
    bad.write_text('{"op": "snapshot"}\n{"op": "invoke", "capabilityId": "x", "inputs": {}}\n')
    proc = subprocess.run([sys.executable, DEMO, "--plan", str(bad)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert ':2: unknown key "inputs" in an invoke step' in proc.stderr


@pytest.mark.skipif(not os.environ.get("RCIP_C_DEMO"), reason="RCIP_C_DEMO (the C dispatch_desk binary) not given")
def test_same_outcome_codes_as_the_c_demo():
    c_proc, c_lines = run([os.environ["RCIP_C_DEMO"]])
    py_proc, py_lines = run([sys.executable, DEMO])
    assert c_proc.returncode == py_proc.returncode == 0
    c_codes, py_codes = codes(c_lines), codes(py_lines)
    assert list(c_codes) == list(py_codes)
    for step in c_codes:
        assert py_codes[step] == c_codes[step], step


def normalized_transcript(text):
    """The text transcript without what differs from run to run or between
    the hosts: generated ids, measured milliseconds, the two header lines
    (the Python host names itself and its catalog)."""
    lines = text.splitlines()[2:]
    out = []
    for line in lines:
        line = re.sub(r"(invocation|confirmation)_[a-z0-9]+_", r"\1_X_", line)
        line = re.sub(r"about -?[0-9]+ ms", "about N ms", line)
        line = re.sub(r"[0-9]+(\.[0-9]+)? ms\b", "N ms", line)
        out.append(line.rstrip())
    return out


@pytest.mark.skipif(not os.environ.get("RCIP_C_DEMO"), reason="RCIP_C_DEMO (the C dispatch_desk binary) not given")
def test_same_text_transcript_as_the_c_demo():
    c = subprocess.run([os.environ["RCIP_C_DEMO"], "--catalog", CATALOG, "--plan", PLAN], capture_output=True, text=True, timeout=120)
    py = subprocess.run([sys.executable, DEMO, "--plan", PLAN], capture_output=True, text=True, timeout=120)
    assert c.returncode == py.returncode == 0, py.stdout[-2000:] + py.stderr[-2000:]
    # As multisets: callbacks on worker threads may interleave differently.
    c_lines, py_lines = normalized_transcript(c.stdout), normalized_transcript(py.stdout)
    assert collections.Counter(py_lines) == collections.Counter(c_lines)
