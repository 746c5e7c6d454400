#!/usr/bin/env python3
"""Runs the official MCP conformance suite's server scenarios against an
rcip host served over Streamable HTTP, and asserts what the suite's own
exit status does not (`make test-mcp-conformance`; README.md next to this
file).

    run.py --node NODE --suite SUITE_JS --baseline baseline.yml --out DIR -- HOST_COMMAND...

1. The baseline is checked first: every entry names a scenario and gives a
   reason (a `# ...` comment on its line), and none of the scenarios issue 14
   requires to pass is listed.
2. HOST_COMMAND is started; it must print one line
   `... serving MCP on http://127.0.0.1:PORT/mcp` within 30 s and listen on
   loopback.
3. `conformance server --url URL --suite all --expected-failures BASELINE -o DIR`
   runs every server scenario (at most 10 minutes); its exit status must be 0
   (no unexpected failure, no stale baseline entry).
4. Every required scenario has results and no FAILURE check, and the SSE
   checks that report only INFO against a server answering plain JSON are
   SUCCESS: server-sse-priming-event, server-sse-retry-field,
   server-sse-disconnect-resume, server-sse-streams-functional.
5. The host is stopped with SIGTERM and must exit 0 within 15 s (graceful
   shutdown).

Standard library only (the machine's python3).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlparse

REQUIRED_SCENARIOS = [
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "json-schema-2020-12",
    "dns-rebinding-protection",
    "server-sse-polling",
    "server-sse-multiple-streams",
    # issue 16: content blocks from output properties (the "content" option)
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    # issue 16: a handler's progress, log messages, elicitation and sampling
    "logging-set-level",
    "tools-call-with-logging",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
]
REQUIRED_SUCCESS = [
    "server-sse-priming-event",
    "server-sse-retry-field",
    "server-sse-disconnect-resume",
    "server-sse-streams-functional",
]


def fail(message: str) -> None:
    print(f"test-mcp-conformance: FAIL: {message}", file=sys.stderr)


def read_baseline(path: Path) -> tuple[list[str], list[str]]:
    """The server entries of the baseline and the problems found in it."""
    entries: list[str] = []
    problems: list[str] = []
    section = None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if re.fullmatch(r"[a-z]+:", stripped):
            section = stripped[:-1]
            continue
        m = re.fullmatch(r"-\s+([a-z0-9-]+)\s*(?:#\s*(.*))?", stripped)
        if not m:
            problems.append(f"{path}:{number}: not a baseline entry: {line!r}")
            continue
        if section != "server":
            problems.append(f"{path}:{number}: only server entries belong here")
        if not (m.group(2) or "").strip():
            problems.append(f"{path}:{number}: {m.group(1)} has no reason (add '# why' on its line)")
        entries.append(m.group(1))
    for name in entries:
        if name in REQUIRED_SCENARIOS:
            problems.append(f"{path}: {name} must pass and must not be in the baseline")
    if len(set(entries)) != len(entries):
        problems.append(f"{path}: duplicate entries")
    return entries, problems


def start_host(command: list[str], log: Path) -> tuple[subprocess.Popen[str], str]:
    errlog = log.open("w")
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errlog, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(proc.stdout.readline() if proc.stdout else ""), daemon=True)
    reader.start()
    reader.join(30)
    line = lines[0] if lines else ""
    if " serving MCP on " not in line:
        proc.kill()
        proc.wait()
        raise SystemExit(f"test-mcp-conformance: the host printed {line!r}, not 'serving MCP on URL' (log: {log})")
    url = line.split(" serving MCP on ", 1)[1].strip()
    host = urlparse(url).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        proc.kill()
        raise SystemExit(f"test-mcp-conformance: the host listens on {host}, not on loopback")
    return proc, url


def stop_host(proc: subprocess.Popen[str]) -> int | None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


def load_checks(out: Path) -> dict[str, list[dict]]:
    """Scenario name -> its checks, from DIR/server-<scenario>-<timestamp>/checks.json."""
    checks: dict[str, list[dict]] = {}
    for path in sorted(out.glob("server-*/checks.json")):
        scenario = re.sub(r"^server-(.*)-\d{4}-\d{2}-\d{2}T.*$", r"\1", path.parent.name)
        checks.setdefault(scenario, []).extend(json.loads(path.read_text()))
    return checks


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--node", required=True)
    parser.add_argument("--suite", required=True, help="the suite's dist/index.js")
    parser.add_argument("--baseline", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("host", nargs="+")
    args = parser.parse_args()

    entries, problems = read_baseline(args.baseline)
    for p in problems:
        fail(p)
    if problems:
        return 1

    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    proc, url = start_host(args.host, args.out / "host.log")
    print(f"test-mcp-conformance: host at {url}; {len(entries)} baseline entries")
    failures = 0
    try:
        suite = [args.node, args.suite, "server", "--url", url, "--suite", "all",
                 "--expected-failures", str(args.baseline.resolve()), "-o", str(args.out)]
        with (args.out / "suite.log").open("w") as log:
            try:
                rc = subprocess.run(suite, stdout=log, stderr=subprocess.STDOUT, timeout=args.timeout).returncode
            except subprocess.TimeoutExpired:
                rc = None
        text = (args.out / "suite.log").read_text()
        summary = text[text.rfind("=== SUMMARY ===") :] if "=== SUMMARY ===" in text else text[-4000:]
        print(summary.rstrip())
        if rc != 0:
            failures += 1
            fail(f"the suite exited with {rc} (log: {args.out / 'suite.log'})")
    finally:
        code = stop_host(proc)
    if code != 0:
        failures += 1
        fail(f"the host exited with {code} after SIGTERM, not 0 (log: {args.out / 'host.log'})")

    checks = load_checks(args.out)
    for scenario in REQUIRED_SCENARIOS:
        got = checks.get(scenario)
        if not got:
            failures += 1
            fail(f"{scenario}: no results")
            continue
        bad = [c for c in got if c.get("status") == "FAILURE"]
        if bad:
            failures += 1
            fail(f"{scenario}: " + "; ".join(f"{c['id']}: {c.get('errorMessage', '')}" for c in bad))
    every = [c for cs in checks.values() for c in cs]
    for check_id in REQUIRED_SUCCESS:
        statuses = [c.get("status") for c in every if c.get("id") == check_id]
        if statuses != ["SUCCESS"] * len(statuses) or not statuses:
            failures += 1
            fail(f"{check_id}: {statuses or 'missing'} (SUCCESS required)")
        else:
            print(f"test-mcp-conformance: {check_id}: SUCCESS")
    print(f"test-mcp-conformance: {'PASS' if failures == 0 else f'{failures} failure(s)'}")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
