"""Serving declared apps: coroutine handlers and policies over HTTP (the
server's own loop, or the caller's), ``rcip.ServeOptions`` shared by the
methods and the ``serve`` flags, the policy's decoded arguments, and the
one-line errors of ``python -m rcip serve``."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import pytest
from conftest import HERE
from test_http import _answer, _initialize, _post

import rcip
from rcip.__main__ import _parser, serve_options

ASYNC_APP = '''
import asyncio, sys
from dataclasses import dataclass
import rcip

app = rcip.App("asyncDesk", name="Async desk", description="Coroutines everywhere.", names="camelCase")

@dataclass
class Ticket:
    ticket_id: int
    title: str

@app.capability(effect="read")
async def slow_echo(invocation: rcip.Invocation, text: str, steps: int = 2) -> str:
    """Echo slowly

    Returns the text after a few steps, reporting progress."""
    for step in range(steps):
        invocation.report_progress(step + 1, steps)
        await asyncio.sleep(0.01)
    return text

@app.capability(effect="write")
def file_ticket(ticket: Ticket) -> Ticket:
    """File a ticket

    Files the ticket as given."""
    return ticket

@app.runtime_policy
async def policy(request: rcip.PolicyRequest) -> rcip.PolicyAnswer:
    await asyncio.sleep(0)
    if request.capability_id == "file_ticket":
        ticket = request.argument("ticket", Ticket)
        return "allow" if ticket.ticket_id < 100 else rcip.deny("ticket %d is too high" % ticket.ticket_id)
    return None
'''


def _env() -> Dict[str, str]:
    e = dict(os.environ)
    if e.get("RCIP_TEST_INSTALLED") != "1":
        e["PYTHONPATH"] = os.path.join(HERE, "..")
    return e


def _serve(module: Any, *flags: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "rcip", "serve", str(module) + ":app", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )


def _call(url: str, sid: str, id: int, name: str, arguments: Dict[str, Any], token: Optional[str] = None) -> List[Dict[str, Any]]:
    params: Dict[str, Any] = {"name": name, "arguments": arguments}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    status, _, text = _post(url, {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}, sid)
    assert status == 200, text
    return [json.loads(line[len("data: ") :]) for line in text.splitlines() if line.startswith("data: {")]


def _check_async_desk(url: str) -> None:
    sid = _initialize(url, "async-test")
    messages = _call(url, sid, 1, "slow_echo", {"text": "hi"}, token="p")
    assert [m["params"]["progress"] for m in messages if m.get("method") == "notifications/progress"] == [1, 2]
    assert messages[-1]["result"]["structuredContent"] == {"result": "hi"}
    ok = _call(url, sid, 2, "file_ticket", {"ticket": {"ticketId": 7, "title": "Jam"}})[-1]["result"]
    assert ok["structuredContent"] == {"ticketId": 7, "title": "Jam"}
    denied = _call(url, sid, 3, "file_ticket", {"ticket": {"ticketId": 700, "title": "Jam"}})[-1]["result"]
    assert denied["_meta"]["rcip/outcome"]["status"] == "denied"
    assert "ticket 700 is too high" in json.dumps(denied)


def test_serve_http_runs_coroutine_handlers_and_policies(tmp_path: Any) -> None:
    module = tmp_path / "async_desk.py"
    module.write_text(ASYNC_APP)
    proc = _serve(module, "--http", "127.0.0.1:0", "--workers", "3")
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("rcip: serving MCP on http://127.0.0.1:"), (line, proc.stderr.read() if proc.stderr else "")
        _check_async_desk(line.split(" on ", 1)[1].strip())
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode == 130, proc.stderr.read() if proc.stderr else ""


def test_serve_http_async_runs_coroutines_on_the_callers_loop(tmp_path: Any) -> None:
    namespace: Dict[str, Any] = {"__name__": "async_desk_inline"}
    sys.modules["async_desk_inline"] = type(sys)("async_desk_inline")
    exec(compile(ASYNC_APP, "async_desk_inline", "exec"), sys.modules["async_desk_inline"].__dict__)
    app: rcip.App = sys.modules["async_desk_inline"].__dict__["app"]
    del namespace
    urls: List[str] = []
    ready = threading.Event()
    result: Dict[str, Any] = {}

    async def main() -> None:
        task = asyncio.ensure_future(app.serve_http_async(options=rcip.ServeOptions(workers=2), on_listening=lambda url: (urls.append(url), ready.set())))
        result["loop"] = asyncio.get_running_loop()
        result["task"] = task
        try:
            await task
        except asyncio.CancelledError:
            result["cancelled"] = True

    thread = threading.Thread(target=lambda: asyncio.run(main()))
    thread.start()
    try:
        assert ready.wait(20)
        _check_async_desk(urls[0])
    finally:
        if "task" in result:
            result["loop"].call_soon_threadsafe(result["task"].cancel)
        thread.join(20)
    assert not thread.is_alive() and result.get("cancelled") is True


def test_serve_options_are_the_serve_flags() -> None:
    parser = _parser()
    flags = {a.dest: a for a in parser._subparsers._group_actions[0].choices["serve"]._actions}  # type: ignore[union-attr]
    for f in dataclasses.fields(rcip.ServeOptions):
        assert f.name in flags and f.metadata["flag"] in flags[f.name].option_strings
    args = parser.parse_args(["serve", "m:app", "--confirm", "elicit", "--tool-names", "safe", "--ttl-ms", "5000", "--workers", "4", "--options", '{"maxSessions": 3, "confirmation": "host"}'])
    options = serve_options(args)
    assert options == rcip.ServeOptions(confirmation="elicit", tool_names="safe", confirmation_ttl_ms=5000, workers=4, options={"maxSessions": 3, "confirmation": "host"})
    assert options.session_json({"serverName": "x"}) == {"maxSessions": 3, "confirmation": "elicit", "toolNames": "safe", "workers": 4, "serverName": "x"}
    with pytest.raises(ValueError):
        rcip.ServeOptions(workers=-1)
    with pytest.raises(ValueError):
        rcip.ServeOptions(confirmation="maybe")  # type: ignore[arg-type]


def test_options_from_a_file(tmp_path: Any) -> None:
    path = tmp_path / "options.json"
    path.write_text('{"toolNames": "safe"}')
    parser = _parser()
    for value in (str(path), "@" + str(path)):
        assert serve_options(parser.parse_args(["serve", "m:app", "--options", value])).options == {"toolNames": "safe"}
    with pytest.raises(SystemExit, match="no such file|No such file"):
        serve_options(parser.parse_args(["serve", "m:app", "--options", str(tmp_path / "missing.json")]))


APPROVAL_APP = '''
import rcip
app = rcip.App("approvals", name="Approvals", description="Needs approval.")

@app.capability(effect="write", needs_approval=True)
def purge(days: int) -> None:
    """Purge

    Purges old entries."""
'''


def test_serve_stdio_with_elicited_confirmation(tmp_path: Any) -> None:
    module = tmp_path / "approvals.py"
    module.write_text(APPROVAL_APP)
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t", "version": "1"}},
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "rcip", "serve", str(module) + ":app", "--confirm", "elicit", "--ttl-ms", "30000"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None

        def send(message: Dict[str, Any]) -> None:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()

        send(init)
        assert json.loads(proc.stdout.readline())["result"]["serverInfo"]["name"] == "approvals"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "purge", "arguments": {"days": 3}}})
        question = json.loads(proc.stdout.readline())
        assert question["method"] == "elicitation/create", question
        send({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {}}})
        answer = json.loads(proc.stdout.readline())
        assert answer["id"] == 2 and answer["result"]["isError"] is False, answer
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ----- the policy's decoded arguments ---------------------------------------------


def test_the_policy_sees_the_decoded_arguments() -> None:
    app = rcip.App("typedPolicy", name="Typed policy", description="Reads typed arguments.", names="camelCase")

    @dataclass
    class Visit:
        visit_id: str
        priority: int

    @app.capability(effect="write")
    def schedule(visit: Visit, technician_id: str, note: Optional[str] = None) -> None:
        """Schedule

        Schedules a visit."""

    seen: List[Any] = []

    @app.runtime_policy
    def policy(request: rcip.PolicyRequest) -> rcip.PolicyAnswer:
        seen.append((request.input, request.arguments))
        visit = request.argument("visit", Visit)
        with pytest.raises(TypeError):
            request.argument("technician_id", int)
        return "allow" if visit.priority > 1 else "deny"

    with app.runtime() as runtime:
        ok = runtime.client.invoke("schedule", {"visit": {"visitId": "V-1", "priority": 2}, "technicianId": "T-9"})
        assert ok.status == "succeeded", ok
        no = runtime.client.invoke("schedule", {"visit": {"visitId": "V-2", "priority": 1}, "technicianId": "T-9"})
        assert no.status == "denied"
    raw, decoded = seen[0]
    assert raw == {"visit": {"visitId": "V-1", "priority": 2}, "technicianId": "T-9"}
    assert decoded == {"visit": Visit("V-1", 2), "technician_id": "T-9"}


def test_app_policy_defaults_to_the_registered_policy() -> None:
    app = rcip.App("registered", name="Registered", description="A registered policy.")

    @app.capability(effect="read")
    def look() -> None:
        """Look

        Looks."""

    app.runtime_policy(lambda request: rcip.deny("not today"))
    with rcip.Runtime(app.catalog(), policy=app.policy()) as runtime:
        app.bind(runtime)
        assert runtime.client.invoke("look", {}).status == "denied"
    with rcip.Runtime(app.catalog(), policy=app.policy(None)) as runtime:
        app.bind(runtime)
        assert runtime.client.invoke("look", {}).status == "succeeded"


# ----- one-line errors of python -m rcip serve ------------------------------------


def _cli(*args: str, cwd: Optional[str] = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rcip", *args], capture_output=True, text=True, timeout=60, env=_env(), cwd=cwd, stdin=subprocess.DEVNULL)


def test_serve_errors_are_one_line_and_exit_2(tmp_path: Any) -> None:
    (tmp_path / "plain.py").write_text("def app(x):\n    return x\n")
    (tmp_path / "refused.py").write_text(
        "import rcip\napp = rcip.App('refused', name='R', description='R.')\n"
        "@app.capability\ndef Bad() -> None:\n    '''T\n\n    D.'''\n"
    )
    (tmp_path / "broken.py").write_text("raise RuntimeError('no database')\n")
    (tmp_path / "scopeless.py").write_text(
        "import rcip\napp = rcip.App('scopeless', name='S', description='S.')\n"
        "@app.capability(scopes=['missing'])\ndef look() -> None:\n    '''T\n\n    D.'''\n"
    )
    (tmp_path / "handlers.py").write_text(
        "import rcip\napp = rcip.App('handlers', name='H', description='H.')\n"
        "@app.capability(effect='destructive')\ndef purge() -> None:\n    '''T\n\n    D.'''\n    print('PURGED')\n"
        "def nothing():\n    return None\n"
        "async def factory():\n    return app\n"
    )
    cases = {
        "handlers:purge": "handlers:purge is the handler of capability purge, not an rcip.App (its apps: handlers:app)",
        "handlers:nothing": "handlers:nothing() returned None, not an rcip.App (its apps: handlers:app)",
        "handlers:factory": "handlers:factory is a coroutine function, not an rcip.App",
        "nosuchmod:app": "no module named 'nosuchmod'",
        "plain:app": "takes arguments, not an rcip.App",
        "refused:app": "refuses a declaration",
        "broken:app": "raised RuntimeError: no database",
        "scopeless:app": "not a valid catalog",
        "missing.py:app": "no such file",
        "plain:nothing": "has no attribute",
    }
    for target, message in cases.items():
        proc = _cli("serve", target, cwd=str(tmp_path))
        assert proc.returncode == 2, (target, proc.stderr)
        assert proc.stderr.count("\n") == 1 and message in proc.stderr and "Traceback" not in proc.stderr, (target, proc.stderr)
    assert "PURGED" not in _cli("serve", "handlers:purge", cwd=str(tmp_path)).stdout  # the handler never ran
    # Ctrl-C while the module is still importing: exit 130, no traceback either.
    (tmp_path / "interrupted.py").write_text("raise KeyboardInterrupt\n")
    interrupted = _cli("serve", "interrupted:app", cwd=str(tmp_path))
    assert interrupted.returncode == 130 and interrupted.stderr == "", interrupted.stderr
    # `--http` without an address, then the target: the target is not taken for the address.
    bare = _cli("serve", "--http", "nosuchmod:app", cwd=str(tmp_path))
    assert bare.returncode == 2 and "no module named 'nosuchmod'" in bare.stderr, bare.stderr
    bad_address = _cli("serve", "plain:app", "--address", "nowhere", cwd=str(tmp_path))
    assert bad_address.returncode == 2 and "not an address" in bad_address.stderr


# ----- honest, convenient types ----------------------------------------------------


def typing_extensions_unpack(t: Any) -> Any:
    """``Unpack[t]`` as ``get_type_hints`` gives it back for an annotation
    written in rcip._app (typing's on 3.11+, else typing_extensions')."""
    import rcip._app as app_module

    unpack = getattr(app_module, "Unpack")
    return unpack[t]


def test_app_runtime_takes_every_runtime_keyword() -> None:
    import inspect

    import typing

    accepted = set(rcip.RuntimeOptions.__annotations__)
    runtime_keywords = {n for n, p in inspect.signature(rcip.Runtime.__init__).parameters.items() if p.kind is p.KEYWORD_ONLY}
    assert accepted == runtime_keywords, "RuntimeOptions and Runtime.__init__ drifted apart"
    # The types too: a keyword retyped on one side only is drift as well.
    options_types = typing.get_type_hints(rcip.RuntimeOptions)
    runtime_types = typing.get_type_hints(rcip.Runtime.__init__)
    retyped = {name: (options_types[name], runtime_types[name]) for name in accepted if options_types[name] != runtime_types[name]}
    assert retyped == {}, "RuntimeOptions and Runtime.__init__ type these keywords differently"
    # App.runtime takes exactly those keywords (catalog besides), typed by that one TypedDict.
    app_runtime = inspect.signature(rcip.App.runtime).parameters
    assert [(n, p.kind) for n, p in app_runtime.items()] == [
        ("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ("catalog", inspect.Parameter.KEYWORD_ONLY),
        ("options", inspect.Parameter.VAR_KEYWORD),
    ]
    assert typing.get_type_hints(rcip.App.runtime, include_extras=True)["options"] == typing_extensions_unpack(rcip.RuntimeOptions)

    app = rcip.App("progressing", name="Progressing", description="Reports progress.")

    @app.capability(effect="read")
    def work(invocation: rcip.Invocation) -> None:
        """Work

        Works in two steps."""
        invocation.report_progress(1, 2)
        invocation.report_progress(2, 2)

    seen: List[Any] = []
    with app.runtime(on_progress=seen.append, confirmation_ttl_ms=1000) as runtime:
        assert runtime.client.invoke("work", {}).status == "succeeded"
    assert [p.progress for p in seen] == [1, 2]
    with pytest.raises(TypeError, match="unexpected keyword arguments nope"):
        app.runtime(nope=1)  # type: ignore[call-arg]


def test_validation_issues_is_an_empty_tuple_when_there_are_none() -> None:
    app = rcip.App("issues", name="Issues", description="Issues.")

    @app.capability(effect="write")
    def write(n: int) -> None:
        """Write

        Writes."""

    with app.runtime() as runtime:
        denied = runtime.client.invoke("write", {"n": 1})
        assert denied.error is not None and denied.error.validation_issues == ()
        bad = runtime.client.invoke("write", {"n": "one"})
        assert bad.error is not None and [i.instance_path for i in bad.error.validation_issues] == ["/n"]


ASKING_APP = '''
import asyncio, sys
import rcip

app = rcip.App("asking", name="Asking", description="Asks and waits.")

@app.capability(effect="read")
async def ask(invocation: rcip.Invocation) -> str:
    """Ask

    Asks the user for a name."""
    invocation.report_progress(1, 2, "asking")
    answer = await invocation.elicit_async("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
    invocation.report_progress(2, 2)
    return "%s: %s" % (answer.action, (answer.content or {}).get("name"))

@app.capability(effect="read")
async def wait() -> None:
    """Wait

    Waits until cancelled."""
    print("asking: waiting", file=sys.stderr, flush=True)
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        print("asking: wait cancelled", file=sys.stderr, flush=True)
        raise
'''


def test_serve_stdio_coroutines_elicit_report_progress_and_are_cancelled(tmp_path: Any) -> None:
    module = tmp_path / "asking.py"
    module.write_text(ASKING_APP)
    proc = subprocess.Popen(
        [sys.executable, "-m", "rcip", "serve", str(module) + ":app", "--workers", "2"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

        def send(message: Dict[str, Any]) -> None:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()

        def recv() -> Dict[str, Any]:
            assert proc.stdout is not None
            message: Dict[str, Any] = json.loads(proc.stdout.readline())
            return message

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t", "version": "1"}}})
        assert recv()["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask", "arguments": {}, "_meta": {"progressToken": "t"}}})
        first = recv()
        assert first["method"] == "notifications/progress" and first["params"]["progress"] == 1, first
        question = recv()
        assert question["method"] == "elicitation/create" and question["params"]["message"] == "Your name?", question
        send({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"name": "Ada"}}})
        second = recv()
        assert second["method"] == "notifications/progress" and second["params"]["progress"] == 2, second
        answer = recv()
        assert answer["id"] == 2 and answer["result"]["structuredContent"] == {"result": "accept: Ada"}, answer

        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "wait", "arguments": {}}})
        assert proc.stderr.readline() == "asking: waiting\n"
        send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})
        assert proc.stderr.readline() == "asking: wait cancelled\n"
        send({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        assert recv() == {"jsonrpc": "2.0", "id": 4, "result": {}}
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
