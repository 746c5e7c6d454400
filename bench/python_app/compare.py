"""A declared Python app served by rcip against the same tool served by the
official SDK's MCPServer (issue 32): the ticket tracker of
tests/mcp/tickets_app.py (`python -m rcip serve ... --http`) and
bench/python_app/fastmcp_tickets.py, each in a process of its own on
127.0.0.1, driven by the same client loop: the official `mcp` client over
Streamable HTTP, one legacy session (2025-11-25), N sequential
`tools/call tickets.search {"query": "printer"}` after a warm-up, every
answer checked. Both answer tools/call as SSE (rcip `"responseMode":
"sse"`, the SDK's default). Rounds are interleaved (rcip first in odd
rounds, MCPServer first in even ones). Per run: wall time per call and the
server's CPU per call (user + system from /proc/PID/stat, before and after
the loop), and the client's CPU per call.

    python bench/python_app/compare.py [--calls 2000] [--rounds 3]

Prints one line per run and a summary; exits non-zero if an answer is
wrong or a server does not start."""

from __future__ import annotations

import argparse
import asyncio
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Tuple

from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[2]
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def start(which: str) -> Tuple[subprocess.Popen, str]:
    env = dict(os.environ)
    if which == "rcip":
        env["PYTHONPATH"] = str(REPO / "bindings" / "python")
        env.setdefault("RCIP_LIBRARY", str(REPO / "target" / "release" / "librcip.so"))
        cmd = [sys.executable, "-m", "rcip", "serve", str(REPO / "tests" / "mcp" / "tickets_app.py") + ":app",
               "--http", "127.0.0.1:0", "--options", '{"responseMode": "sse"}']
    else:
        cmd = [sys.executable, str(REPO / "bench" / "python_app" / "fastmcp_tickets.py")]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines: "queue.Queue[str]" = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout or []], daemon=True).start()
    line = lines.get(timeout=30)
    if " serving MCP on http://127.0.0.1:" not in line:
        proc.kill()
        raise SystemExit(f"{which}: the server printed {line!r}")
    return proc, line.split(" on ", 1)[1].strip()


async def drive(url: str, calls: int, pid: int) -> Dict[str, float]:
    """The measured loop, after a warm-up: wall, server CPU and client CPU
    per call, in microseconds."""
    async with Client(streamable_http_client(url), mode="legacy", read_timeout_seconds=30) as client:
        for _ in range(20):
            await client.call_tool("tickets.search", {"query": "printer"})
        s0, c0, t0 = cpu_seconds(pid), time.process_time(), time.perf_counter()
        for _ in range(calls):
            r = await client.call_tool("tickets.search", {"query": "printer"})
            out = r.structured_content or {}
            # MCPServer wraps a returned dict in {"result": ...}.
            tickets = out.get("tickets", out.get("result", {}).get("tickets", []))
            if r.is_error or [t["ticketId"] for t in tickets] != [1, 2]:
                raise SystemExit(f"wrong answer from {url}: {r}")
        wall, client_cpu, server_cpu = time.perf_counter() - t0, time.process_time() - c0, cpu_seconds(pid) - s0
    return {"wall_us": wall / calls * 1e6, "server_us": server_cpu / calls * 1e6, "client_us": client_cpu / calls * 1e6}


def run(which: str, calls: int) -> Dict[str, float]:
    proc, url = start(which)
    try:
        return asyncio.run(drive(url, calls, proc.pid))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results: Dict[str, List[Dict[str, float]]] = {"rcip": [], "mcpserver": []}
    for r in range(args.rounds):
        order = ["rcip", "mcpserver"] if r % 2 == 0 else ["mcpserver", "rcip"]
        for which in order:
            m = run(which, args.calls)
            results[which].append(m)
            print(f"round {r + 1} {which:9s} wall {m['wall_us']:8.1f} us/call  server CPU {m['server_us']:7.1f} us/call"
                  f"  client CPU {m['client_us']:7.1f} us/call", flush=True)
    for which, runs in results.items():
        walls = sorted(m["wall_us"] for m in runs)
        cpus = sorted(m["server_us"] for m in runs)
        print(f"{which:9s} wall {walls[0]:.1f}-{walls[-1]:.1f} us/call, server CPU {cpus[0]:.1f}-{cpus[-1]:.1f} us/call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
