"""A ticket tracker declared with `@app.capability` and nothing else, for
tests/mcp/test_python_app.py, which serves it with

    python -m rcip serve tests/mcp/tickets_app.py:app --http 127.0.0.1:0 --confirm elicit

- `tickets.search` (read, a coroutine): finds tickets by title; with
  `archive: true` it also scans the archive slowly (about 2 s), reporting
  progress, and says so on standard error when it is cancelled;
- `tickets.close` (write, needs approval): the MCP client's user approves
  it through elicitation (`--confirm elicit`);
- `tickets.delete` (destructive): the runtime policy refuses it for a
  ticket that is still open, reading the decoded `ticket_id` (an `int`)."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from typing import Annotated, Dict, List, Literal

import rcip

app = rcip.App("ticketTracker", name="Ticket tracker", description="A small ticket tracker.", version="1.0.0", names="camelCase")


@dataclass
class Ticket:
    ticket_id: int
    title: str
    status: Literal["open", "closed"]


@dataclass
class Found:
    tickets: List[Ticket]
    archived: int


TICKETS: Dict[int, Ticket] = {
    1: Ticket(1, "Printer jam on floor 2", "open"),
    2: Ticket(2, "Printer out of toner", "open"),
    3: Ticket(3, "Coffee machine leaks", "closed"),
}

ARCHIVE_STEPS = 20


@app.capability(id="tickets.search", effect="read")
async def search(
    invocation: rcip.Invocation,
    query: Annotated[str, rcip.Field(min_length=1)],
    archive: bool = False,
) -> Found:
    """Search tickets

    Finds the tickets whose title contains the query.

    Args:
        query: Words of the title.
        archive: Also scan the archive (slow).
    """
    found = [t for t in TICKETS.values() if query.lower() in t.title.lower()]
    archived = 0
    if archive:
        try:
            for step in range(ARCHIVE_STEPS):
                invocation.report_progress(step, ARCHIVE_STEPS, "Scanning the archive")
                await asyncio.sleep(0.1)
            invocation.report_progress(ARCHIVE_STEPS, ARCHIVE_STEPS, "Archive scanned")
        except asyncio.CancelledError:
            print("tickets_app: archive search cancelled", file=sys.stderr, flush=True)
            raise
    return Found(found, archived)


@app.capability(id="tickets.close", effect="write", needs_approval=True)
def close(ticket_id: int, resolution: Annotated[str, rcip.Field(min_length=1)]) -> Ticket:
    """Close a ticket

    Closes an open ticket with a resolution.
    """
    ticket = TICKETS[ticket_id]
    ticket.status = "closed"
    print("tickets_app: closed %d: %s" % (ticket_id, resolution), file=sys.stderr, flush=True)
    return ticket


@app.capability(id="tickets.delete", effect="destructive")
def delete(ticket_id: int) -> None:
    """Delete a ticket

    Deletes a ticket for good.
    """
    del TICKETS[ticket_id]


@app.runtime_policy
def policy(request: rcip.PolicyRequest) -> rcip.PolicyAnswer:
    if request.capability_id == "tickets.delete":
        ticket_id = request.argument("ticket_id", int)
        ticket = TICKETS.get(ticket_id)
        if ticket is not None and ticket.status == "open":
            return rcip.deny("ticket %d is still open: close it first" % ticket_id)
    return None  # the library's default for the rest
