"""The shared conformance scenarios, run through the Python binding and
compared with their expected transcripts (the compare.py rules)."""

from __future__ import annotations

import json
import os

import pytest
from conftest import ROOT

import conformance_runner

SCENARIOS = os.path.join(ROOT, "tests", "conformance", "scenarios")
FILES = sorted(n for n in os.listdir(SCENARIOS) if n.endswith(".json"))


def test_there_are_scenarios():
    assert len(FILES) >= 60


@pytest.mark.parametrize("name", FILES)
def test_scenario(name):
    with open(os.path.join(SCENARIOS, name), encoding="utf-8") as f:
        scenario = json.load(f)
    problem = conformance_runner.compare(conformance_runner.run(scenario), scenario)
    assert problem is None, problem


def test_comparator_catches_differences():
    scenario = {"expected": {"create": {"ok": True}, "transcript": [{"outcome": {"invocationId": "a", "status": "failed", "error": {"code": "X", "message": "m"}}}]}}
    same = {"create": {"ok": True}, "transcript": [{"outcome": {"invocationId": "zz", "status": "failed", "error": {"code": "X", "message": "other"}}}]}
    assert conformance_runner.compare(same, scenario) is None
    wrong = {"create": {"ok": True}, "transcript": [{"outcome": {"invocationId": "zz", "status": "failed", "error": {"code": "Y", "message": "m"}}}]}
    assert "code" in conformance_runner.compare(wrong, scenario)
    assert conformance_runner.diff(1, 1.0, "$", set()) is None
    assert conformance_runner.diff(True, 1, "$", set()) is not None
