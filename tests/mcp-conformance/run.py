#!/usr/bin/env python3
"""Runs the official MCP conformance suite's server scenarios against an
rcip host served over Streamable HTTP, and asserts what the suite's own
exit status does not (`make test-mcp-conformance`; README.md next to this
file).

    run.py --node NODE --suite SUITE_JS --baseline baseline.yml --out DIR -- HOST_COMMAND...
    run.py --requirements 2026-07-28 --node NODE --suite NEXT_SUITE_JS \
        --baseline baseline-2026-07-28.yml --out DIR -- HOST_COMMAND... eras=both

The first form is the legacy-era run (suite 0.1.16, `--suite all`, every
scenario over an `initialize` session); the second runs what the named
revision requires (suite 0.2.0-alpha.12, `--requirements`, statelessly).

1. The baseline is checked first: every entry names a scenario (or, with
   --requirements, `scenario:check-id`) and gives a reason (a `# ...`
   comment on its line), and none of the scenarios that must pass is listed
   as a whole. With --requirements every reason names its issue
   (`issue N`), and only single checks of server-stateless and caching may
   be listed.
2. HOST_COMMAND is started; it must print one line
   `... serving MCP on http://127.0.0.1:PORT/mcp` within 30 s and listen on
   loopback.
3. `conformance server --url URL --suite all --expected-failures BASELINE -o DIR`
   (or `--requirements REVISION` instead of `--suite all`) runs the server
   scenarios (at most 10 minutes); its exit status must be 0 (no unexpected
   failure, no stale baseline entry).
4. Every required scenario has results and no FAILURE check but the
   baselined ones, and (legacy run) the SSE checks that report only INFO
   against a server answering plain JSON are SUCCESS:
   server-sse-priming-event, server-sse-retry-field,
   server-sse-disconnect-resume, server-sse-streams-functional. With
   --requirements, the scenarios the revision runs without scoring them
   (the suite's requirements/REVISION.yaml, `not_scored`) are summarised in DIR/not-scored.json
   and printed; they cannot fail the run.
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
# The 2026-07-28 run (--requirements 2026-07-28): the scored scenarios
# that apply to a tools server (issue 25). Only single checks of the
# scenarios in PER_CHECK_ONLY may be baselined (caching's resources and
# prompts checks, issue 38); the others may not be baselined at all.
MODERN_REQUIRED_SCENARIOS = [
    "server-stateless",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "tools-call-with-progress",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    "caching",
]
PER_CHECK_ONLY = ["server-stateless", "caching"]
REQUIRED_SUCCESS = [
    "server-sse-priming-event",
    "server-sse-retry-field",
    "server-sse-disconnect-resume",
    "server-sse-streams-functional",
]


def fail(message: str) -> None:
    print(f"test-mcp-conformance: FAIL: {message}", file=sys.stderr)


def read_baseline(path: Path, modern: bool = False) -> tuple[list[str], list[str]]:
    """The server entries of the baseline and the problems found in it.

    `modern`: the 2026-07-28 baseline, whose entries may name one check
    (`scenario:check-id`) and whose reasons must name an issue."""
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
        entry = r"[a-z0-9-]+(?::[A-Za-z0-9_$.-]+)?" if modern else r"[a-z0-9-]+"
        m = re.fullmatch(rf"-\s+({entry})\s*(?:#\s*(.*))?", stripped)
        if not m:
            problems.append(f"{path}:{number}: not a baseline entry: {line!r}")
            continue
        if section != "server":
            problems.append(f"{path}:{number}: only server entries belong here")
        if not (m.group(2) or "").strip():
            problems.append(f"{path}:{number}: {m.group(1)} has no reason (add '# why' on its line)")
        elif modern and not re.search(r"\bissue \d+", m.group(2)):
            problems.append(f"{path}:{number}: {m.group(1)}: the reason names no issue ('issue N')")
        entries.append(m.group(1))
    required = MODERN_REQUIRED_SCENARIOS if modern else REQUIRED_SCENARIOS
    for name in entries:
        scenario, _, check = name.partition(":")
        if scenario in required and not (check and scenario in PER_CHECK_ONLY):
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


def not_scored(suite_js: Path, revision: str) -> list[tuple[str, str]]:
    """(scenario, reason) of the server scenarios the revision runs without
    scoring them: the `not_scored` list of the suite's frozen
    requirements/REVISION.yaml (the suite prints it only without a
    baseline). A small reader of that file's regular layout (no YAML
    library: standard library only)."""
    path = suite_js.resolve().parent.parent / "requirements" / f"{revision}.yaml"
    rows: list[tuple[str, str]] = []
    section = None
    item: dict[str, str] = {}
    for line in path.read_text().splitlines() + ["end:"]:
        if re.fullmatch(r"[a-z_]+:\s*", line):
            section = line.strip()[:-1]
        m = re.fullmatch(r"\s*(-\s+)?(scenario|leg|reason):\s*(\S+)\s*", line)
        if section == "not_scored" and m:
            if m.group(1):
                item = {}
            item[m.group(2)] = m.group(3)
            if item.get("leg") == "server" and "scenario" in item and "reason" in item:
                rows.append((item["scenario"], item["reason"]))
                item = {}
    return rows


def report_not_scored(out: Path, checks: dict[str, list[dict]], rows: list[tuple[str, str]]) -> None:
    """Writes DIR/not-scored.json (each scenario's reason, verdict and
    non-SUCCESS checks) and prints one line per scenario."""
    summary = []
    for scenario, reason in rows:
        got = checks.get(scenario, [])
        counts: dict[str, int] = {}
        for c in got:
            counts[c.get("status", "?")] = counts.get(c.get("status", "?"), 0) + 1
        others = [
            {"id": c.get("id"), "status": c.get("status"), "errorMessage": c.get("errorMessage", "")}
            for c in got
            if c.get("status") != "SUCCESS"
        ]
        summary.append({"scenario": scenario, "reason": reason, "statuses": counts, "notSuccess": others})
        print(f"test-mcp-conformance: not scored ({reason}): {scenario}: "
              + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    (out / "not-scored.json").write_text(json.dumps(summary, indent=2) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--node", required=True)
    parser.add_argument("--suite", required=True, help="the suite's dist/index.js")
    parser.add_argument("--baseline", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--requirements", help="run what this revision requires (suite 0.2), e.g. 2026-07-28")
    parser.add_argument("host", nargs="+")
    args = parser.parse_args()

    modern = args.requirements is not None
    entries, problems = read_baseline(args.baseline, modern)
    for p in problems:
        fail(p)
    if problems:
        return 1

    scored_out = not_scored(Path(args.suite), args.requirements) if modern else []
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    proc, url = start_host(args.host, args.out / "host.log")
    print(f"test-mcp-conformance: host at {url}; {len(entries)} baseline entries")
    failures = 0
    try:
        selection = ["--requirements", args.requirements] if modern else ["--suite", "all"]
        suite = [args.node, args.suite, "server", "--url", url, *selection,
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
    excused = {e for e in entries if ":" in e}
    for scenario in MODERN_REQUIRED_SCENARIOS if modern else REQUIRED_SCENARIOS:
        got = checks.get(scenario)
        if not got:
            failures += 1
            fail(f"{scenario}: no results")
            continue
        bad = [c for c in got if c.get("status") == "FAILURE" and f"{scenario}:{c.get('id')}" not in excused]
        if bad:
            failures += 1
            fail(f"{scenario}: " + "; ".join(f"{c['id']}: {c.get('errorMessage', '')}" for c in bad))
    if modern:
        if not scored_out:
            failures += 1
            fail(f"the suite's requirements/{args.requirements}.yaml lists no server scenario under not_scored")
        report_not_scored(args.out, checks, scored_out)
    every = [c for cs in checks.values() for c in cs]
    for check_id in [] if modern else REQUIRED_SUCCESS:
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
