"""Shared fixtures. The library comes from RCIP_LIBRARY (the Makefile points
it at target/release/librcip.so) or from the installed package."""

from __future__ import annotations

import copy
import os
import signal
import sys
from typing import Any, Dict

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("RCIP_REPO_ROOT") or os.path.normpath(os.path.join(HERE, "..", "..", ".."))

# Import the package from the source tree unless told otherwise.
if os.environ.get("RCIP_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(HERE, ".."))
    if "RCIP_LIBRARY" not in os.environ:
        candidate = os.path.join(ROOT, "target", "release", "librcip.so")
        if os.path.exists(candidate):
            os.environ["RCIP_LIBRARY"] = candidate

import rcip  # noqa: E402

# Several tests stop a served app with Ctrl-C (SIGINT) and expect it to
# exit. A shell without job control starts background commands with SIGINT
# ignored, and an ignored signal stays ignored across exec, so under
# `make test &` or nohup the served apps would never see it and those tests
# would time out. Python's own handler is reset to the default in a child,
# so installing it here gives every child the ordinary Ctrl-C.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

CLOCK_START = 1767225600000

OBJECT_OUT = {"type": "object"}

CATALOG: Dict[str, Any] = {
    "protocolVersion": "1.0",
    "application": {"id": "desk", "name": "Desk", "description": "A help desk."},
    "scopes": [
        {"id": "tickets", "title": "Tickets", "description": "Ticket queue."},
        {"id": "admin", "title": "Admin", "description": "Administration."},
    ],
    "capabilities": [
        {
            "id": "greeting.say",
            "title": "Say hello",
            "description": "Greets someone by name.",
            "scopeIds": [],
            "effect": "read",
            "inputSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "minLength": 1}},
                "required": ["name"],
                "additionalProperties": False,
            },
            "outputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        },
        {
            "id": "tickets.list",
            "title": "List tickets",
            "description": "Lists open tickets.",
            "scopeIds": ["tickets"],
            "effect": "read",
            "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "properties": {"items": {"type": "array"}}, "required": ["items"]},
        },
        {
            "id": "tickets.create",
            "title": "Create ticket",
            "description": "Opens a ticket.",
            "scopeIds": ["tickets"],
            "effect": "write",
            "inputSchema": {
                "type": "object",
                "properties": {"title": {"type": "string", "minLength": 1}},
                "required": ["title"],
            },
            "outputSchema": OBJECT_OUT,
        },
        {
            "id": "tickets.purge",
            "title": "Purge tickets",
            "description": "Deletes every closed ticket.",
            "scopeIds": ["admin"],
            "effect": "destructive",
            "inputSchema": {"type": "object"},
            "outputSchema": OBJECT_OUT,
        },
        {
            "id": "mail.send",
            "title": "Send mail",
            "description": "Sends an e-mail.",
            "scopeIds": [],
            "effect": "external",
            "inputSchema": {"type": "object"},
            "outputSchema": OBJECT_OUT,
        },
    ],
}


@pytest.fixture
def catalog_dict() -> Dict[str, Any]:
    return copy.deepcopy(CATALOG)


@pytest.fixture
def catalog(catalog_dict: Dict[str, Any]):
    c = rcip.Catalog(catalog_dict)
    yield c
    c.close()


@pytest.fixture
def clock() -> rcip.ManualClock:
    return rcip.ManualClock(CLOCK_START)


class Errors(list):
    """Collects (exception, where) from on_error."""

    def __call__(self, exc: BaseException, where: str) -> None:
        self.append((exc, where))


@pytest.fixture
def errors() -> Errors:
    return Errors()


def allow_all(request: rcip.PolicyRequest) -> str:
    return "allow"
