#!/usr/bin/env python3
"""dispatch_desk.py: the dispatch desk host, in Python (the project's main job).

The same program as examples-c/dispatch_desk.c, through the ``rcip`` Python
binding: an in-memory maintenance-dispatch desk (24 visits, 6 technicians)
exposes the capabilities of examples-c/dispatch/catalog.json, binds a handler
to each, answers availability, runs a host policy and a confirmation dialog,
then replays an agent plan (examples-c/dispatch/plan.jsonl; format in
README.md, "Plan files"), printing every outcome and lifecycle event and
checking each outcome against the plan. Same catalog, same plan, same
outcome codes as the C host.

    python3 dispatch_desk.py [--json] [--ttl-ms N] [--catalog FILE] [--plan FILE]

Python 3.10 or later (one dataclass field uses ``kw_only``; the package
itself needs 3.9).

Exit status: 0 every outcome was as the plan expected; 1 some differed;
2 the catalog, the plan or the command line could not be used.

What it shows of the Python API: handlers return their output (a dict) or
raise; the archive search defers its invocation to a worker thread that
polls the cancellation token; the policy returns decisions; the
confirmation dialog resolves inline from the confirmation callback;
outcomes are futures whose done-callbacks print them on whichever thread
settles them; bindings are kept by the runtime until closed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, Dict, List, Literal, Optional, Tuple, Union

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, ".."))  # the package from the source tree, when run from it

import rcip  # noqa: E402

DEFAULT_TTL_MS = 1500
OUTCOME_TIMEOUT_S = 30.0
ARCHIVE_SCAN_MS = 800
ARCHIVE_POLL_MS = 10
ARCHIVE_PROGRESS_MS = 100  # how often the archive search reports progress

# ======================================================================
# 1. Transcript printing (callbacks arrive on other threads)
# ======================================================================


class Out:
    lock = threading.Lock()
    json_mode = False
    # The transcript goes to standard output when this runs as the desk
    # program; served over MCP (`python -m rcip serve`), standard output
    # carries the protocol, so the desk's log goes to standard error.
    stream = sys.stdout if __name__ == "__main__" else sys.stderr


def say(text: str = "") -> None:
    if Out.json_mode:
        return
    with Out.lock:
        Out.stream.write(text + "\n")
        Out.stream.flush()


def emit(record: Dict[str, Any]) -> None:
    if not Out.json_mode:
        return
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    with Out.lock:
        Out.stream.write(line + "\n")
        Out.stream.flush()


def host_log(who: str, message: str) -> None:
    if Out.json_mode:
        emit({"type": "log", "who": who, "message": message})
    else:
        say("     %-9s %s" % (who, message))


def result_name(error: Optional[rcip.RcipError]) -> str:
    if error is None:
        return "OK"
    return error.code.name if isinstance(error.code, rcip.Result) else "UNKNOWN"


def now_ms() -> int:
    return int(time.time() * 1000)


def outcome_summary(o: Dict[str, Any]) -> str:
    status = o.get("status") or "?"
    code = (o.get("error") or {}).get("code")
    return status + (" " + code if code else "")


def print_outcome(step: str, source: str, outcome: rcip.Outcome) -> None:
    o = outcome.to_dict()
    if Out.json_mode:
        emit({"type": "outcome", "step": step, "source": source, "outcome": o})
        return
    label = "outcome" if source == "invoke" else source
    status = o.get("status")
    if status == "succeeded":
        text = json.dumps(o.get("output"), ensure_ascii=False, separators=(",", ":"))
        say("  => %-9s succeeded: %s%s" % (label, text[:160], " ..." if len(text) > 160 else ""))
    elif status == "confirmation_required":
        c = o.get("confirmation") or {}
        say(
            '  => %-9s confirmation_required: %s "%s" (expires in about %d ms)'
            % (label, c.get("id", "?"), c.get("title", "?"), c.get("expiresAt", 0) - now_ms())
        )
    else:
        error = o.get("error") or {}
        say("  => %-9s %s %s: %s" % (label, status, error.get("code", "?"), error.get("message", "?")))
        for issue in error.get("validationIssues") or []:
            say("            issue %s %s: %s" % (issue.get("instancePath") or "(input)", issue.get("keyword", "?"), issue.get("message", "?")))


# ======================================================================
# 2. The desk (no rcip here): 24 visits, 6 technicians
# ======================================================================

TODAY = "2026-01-05"
TECH_CAPACITY = 3
MAX_NOTES = 16

SEED_TECHNICIANS = [
    ("T-01", "Ana Ruiz", ("hvac", "electrical"), True),
    ("T-02", "Ben Okafor", ("plumbing", "hvac"), True),
    ("T-03", "Chloe Martin", ("electrical",), True),
    ("T-04", "Dev Patel", ("plumbing",), True),
    ("T-05", "Eva Lindqvist", ("hvac",), False),
    ("T-06", "Farid Haddad", ("electrical", "plumbing"), False),
]

# id, site, issue, skill, priority, status, technician, date, window, note
SEED_VISITS = [
    ("V-1001", "Northgate Library", "Boiler loses pressure overnight", "hvac", "normal", "assigned", "T-01", "2026-01-05", "morning", None),
    ("V-1002", "Juniper Dental", "Autoclave circuit breaker trips", "electrical", "urgent", "assigned", "T-03", "2026-01-05", "morning", None),
    ("V-1003", "Harbor Bakery", "Walk-in cooler compressor short-cycling", "hvac", "urgent", "new", "", "2026-01-05", "afternoon", "Cooler read 9 C at 07:00; stock moved to the van."),
    ("V-1004", "Elm Street Apartments 4B", "Kitchen sink leaking under the cabinet", "plumbing", "normal", "assigned", "T-04", "2026-01-05", "afternoon", None),
    ("V-1005", "Riverside Gym", "Shower drains slow in the locker room", "plumbing", "low", "new", "", "2026-01-06", "morning", None),
    ("V-1006", "Cedar Primary School", "Gym lights flicker", "electrical", "normal", "assigned", "T-03", "2026-01-06", "morning", None),
    ("V-1007", "Maple Clinic", "Rooftop unit gives no heat", "hvac", "urgent", "assigned", "T-01", "2026-01-05", "afternoon", None),
    ("V-1008", "Old Mill Lofts", "Annual boiler service", "hvac", "low", "closed", "T-05", "2026-01-02", "morning", None),
    ("V-1009", "Pine Hotel", "Room 214 thermostat is blank", "electrical", "normal", "new", "", "2026-01-06", "afternoon", None),
    ("V-1010", "Lakeside Cafe", "Grease trap backing up", "plumbing", "urgent", "assigned", "T-04", "2026-01-05", "morning", None),
    ("V-1011", "Orchard Offices", "Server room air conditioning alarm", "hvac", "urgent", "assigned", "T-05", "2026-01-05", "morning", "Assigned technician is off shift today."),
    ("V-1012", "Birch Daycare", "Water heater pilot keeps going out", "plumbing", "urgent", "new", "", "2026-01-05", "morning", None),
    ("V-1013", "Quarry Road Warehouse", "Dock door heater does not start", "hvac", "normal", "new", "", "2026-01-07", "morning", None),
    ("V-1014", "Willow Care Home", "Toilet running in room 3", "plumbing", "low", "closed", "T-04", "2026-01-02", "afternoon", None),
    ("V-1015", "Summit Bank", "Emergency lighting test failed", "electrical", "normal", "assigned", "T-01", "2026-01-06", "afternoon", None),
    ("V-1016", "Ash Lane Bakery", "Oven hood fan is noisy", "electrical", "low", "new", "", "2026-01-08", "morning", None),
    ("V-1017", "Bayview Dental", "Compressed air line leaking", "plumbing", "normal", "new", "", "2026-01-07", "afternoon", None),
    ("V-1018", "Granite Gym", "Sauna heater relay failed", "electrical", "normal", "assigned", "T-03", "2026-01-06", "morning", None),
    ("V-1019", "Hillside Library", "Radiator valve stuck", "hvac", "low", "closed", "T-01", "2026-01-03", "morning", None),
    ("V-1020", "Corner Grocery", "Freezer aisle drain blocked", "plumbing", "normal", "assigned", "T-02", "2026-01-05", "afternoon", None),
    ("V-1021", "Station Hostel", "Boiler makes a banging noise", "hvac", "normal", "new", "", "2026-01-06", "morning", None),
    ("V-1022", "Museum of Clocks", "Gallery outlets dead", "electrical", "urgent", "new", "", "2026-01-05", "afternoon", None),
    ("V-1023", "Fern Street Flats", "Leaking shower valve", "plumbing", "low", "closed", "T-02", "2026-01-02", "afternoon", None),
    ("V-1024", "Tannery Studios", "Heat pump defrost fault", "hvac", "normal", "new", "", "2026-01-08", "afternoon", None),
]

ARCHIVE = [
    ("A-0412", "Harbor Bakery", "Compressor replaced on the walk-in cooler", "2025-08-14"),
    ("A-0388", "Northgate Library", "Boiler expansion vessel recharged", "2025-06-02"),
    ("A-0301", "Maple Clinic", "Rooftop unit belt replaced", "2025-03-19"),
    ("A-0275", "Lakeside Cafe", "Grease trap pumped", "2025-02-07"),
    ("A-0190", "Station Hostel", "Boiler pump replaced", "2024-11-28"),
]



# What the desk's capabilities take and return, as Python types: the
# declarations below generate the catalog's schemas from them (the same
# schemas as examples-c/dispatch/catalog.json; tests/test_declarations.py
# compares them), and the handlers receive and return them.

Priority = Literal["low", "normal", "urgent"]
Skill = Literal["hvac", "plumbing", "electrical"]
VisitStatus = Literal["new", "assigned", "closed"]
Window = Literal["morning", "afternoon"]
Resolution = Literal["fixed", "noAccess", "duplicate", "cancelledByCustomer"]
VisitId = Annotated[str, rcip.Field(pattern=r"^V-[0-9]{4}$")]
TechnicianId = Annotated[str, rcip.Field(pattern=r"^T-[0-9]{2}$")]
IsoDate = Annotated[str, rcip.Field(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")]
Limit = Annotated[int, rcip.Field(minimum=1, maximum=24)]
Count = Annotated[int, rcip.Field(minimum=0)]
Text = Annotated[str, rcip.Field(min_length=1, max_length=500)]


@rcip.named("visit")
@dataclass
class VisitCard:
    id: str
    site: str
    issue: str
    skill: Skill
    priority: Priority
    status: VisitStatus
    # Absent while unassigned. kw_only (Python 3.10) lets it sit where the C
    # desk writes it, between status and date, ahead of required fields.
    technician_id: Optional[str] = field(default=None, kw_only=True)
    date: str
    window: Window
    notes: Count


@dataclass
class VisitList:
    visits: List[VisitCard]
    total: Count


@dataclass
class ArchivedVisit:
    id: str
    site: str
    issue: str
    closed_on: str


@dataclass
class SearchResult:
    visits: List[VisitCard]
    total: Count
    archive: Optional[List[ArchivedVisit]] = None  # only with includeArchive


@dataclass
class Assignment:
    visit_id: str
    technician_id: str
    technician_name: str
    status: Literal["assigned"]
    technician_load: Annotated[int, rcip.Field(minimum=1)]


@dataclass
class Rescheduled:
    visit_id: str
    date: str
    window: str
    previous_date: str
    previous_window: str


@dataclass
class NoteAdded:
    visit_id: str
    note_count: Annotated[int, rcip.Field(minimum=1)]


@dataclass
class Closed:
    visit_id: str
    status: Literal["closed"]
    resolution: str


class Refused(Exception):
    """A desk check or change did not go through; ``status`` names why."""

    def __init__(self, status: str, reason: str = "") -> None:
        super().__init__(reason or status)
        self.status = status
        self.reason = reason


@dataclass
class Technician:
    id: str
    name: str
    skills: Tuple[str, ...]
    on_shift: bool


@dataclass
class Visit:
    id: str
    site: str
    issue: str
    skill: str
    priority: str
    status: str
    technician: str
    date: str
    window: str
    resolution: str = ""
    notes: List[str] = field(default_factory=list)

    def card(self) -> VisitCard:
        return VisitCard(
            self.id, self.site, self.issue, self.skill, self.priority, self.status,  # type: ignore[arg-type]
            self.date, self.window, len(self.notes), technician_id=self.technician or None,  # type: ignore[arg-type]
        )  # fmt: skip


def valid_date(date: Any) -> bool:
    if not isinstance(date, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        return False
    year, month, day = int(date[:4]), int(date[5:7]), int(date[8:])
    days = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    if month < 1 or month > 12 or day < 1:
        return False
    leap = (year % 4 == 0 and year % 100 != 0) or year % 400 == 0
    return day <= days[month - 1] + (1 if month == 2 and leap else 0) and date >= TODAY


class Desk:
    """The application itself. Every method takes the desk's lock and
    releases it before returning: never held while calling rcip."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.technicians = [Technician(t[0], t[1], t[2], t[3]) for t in SEED_TECHNICIANS]
        self.visits = []
        for v in SEED_VISITS:
            visit = Visit(*v[:9])
            if visit.status == "closed":
                visit.resolution = "fixed"
            if v[9]:
                visit.notes.append(v[9])
            self.visits.append(visit)
        self.read_only = False
        self.focus = ""
        self.changes = 0

    # helpers (lock held)
    def _visit(self, visit_id: Any) -> Optional[Visit]:
        return next((v for v in self.visits if v.id == visit_id), None)

    def _technician(self, tech_id: Any) -> Optional[Technician]:
        return next((t for t in self.technicians if t.id == tech_id), None)

    def _load(self, tech_id: str) -> int:
        return sum(1 for v in self.visits if v.status != "closed" and v.technician == tech_id)

    def _check_open_visit(self, visit_id: Any) -> Visit:
        if not isinstance(visit_id, str):
            raise Refused("BAD_INPUT", "The request is missing a field.")
        v = self._visit(visit_id)
        if v is None:
            raise Refused("NO_VISIT", "There is no visit %s on the desk." % visit_id)
        if v.status == "closed":
            raise Refused("VISIT_CLOSED", "Visit %s is already closed." % visit_id)
        return v

    def _check_assign(self, visit_id: Any, tech_id: Any) -> Tuple[Visit, Technician]:
        v = self._check_open_visit(visit_id)
        if not isinstance(tech_id, str):
            raise Refused("BAD_INPUT", "The request is missing a field.")
        t = self._technician(tech_id)
        if t is None:
            raise Refused("NO_TECHNICIAN", "There is no technician %s." % tech_id)
        if not t.on_shift:
            raise Refused("TECHNICIAN_OFF_SHIFT", "Technician %s is off shift today." % tech_id)
        if v.skill not in t.skills:
            raise Refused("SKILL_MISMATCH", "Technician %s does not have the %s skill visit %s needs." % (tech_id, v.skill, visit_id))
        if v.technician != tech_id and self._load(tech_id) >= TECH_CAPACITY:
            raise Refused("TECHNICIAN_FULL", "Technician %s already carries %d open visits." % (tech_id, TECH_CAPACITY))
        return v, t

    def _writable(self) -> None:
        if self.read_only:
            raise Refused("READ_ONLY", "The desk is read-only.")

    # state the availability checks read
    def is_read_only(self) -> bool:
        with self.lock:
            return self.read_only

    def any_technician_free(self) -> bool:
        with self.lock:
            return any(t.on_shift and self._load(t.id) < TECH_CAPACITY for t in self.technicians)

    def focused_visit_closed(self) -> Optional[str]:
        with self.lock:
            v = self._visit(self.focus) if self.focus else None
            return v.id if v is not None and v.status == "closed" else None

    def change_count(self) -> int:
        with self.lock:
            return self.changes

    # the dispatcher's own actions
    def set_read_only(self, read_only: bool) -> None:
        with self.lock:
            self.read_only = read_only
            self.changes += 1

    def set_on_shift(self, tech_id: str, on_shift: bool) -> bool:
        with self.lock:
            t = self._technician(tech_id)
            if t is None:
                return False
            t.on_shift = on_shift
            self.changes += 1
            return True

    def set_focus(self, visit_id: str) -> bool:
        with self.lock:
            if visit_id and self._visit(visit_id) is None:
                return False
            self.focus = visit_id
            self.changes += 1
            return True

    # queries
    def list_open(self, priority: Any, tech_id: Any, unassigned_only: bool, limit: int) -> VisitList:
        with self.lock:
            hits = [
                v
                for v in self.visits
                if v.status != "closed"
                and (not isinstance(priority, str) or v.priority == priority)
                and (not isinstance(tech_id, str) or v.technician == tech_id)
                and not (unassigned_only and v.technician)
            ]
            shown = hits[:limit] if limit > 0 else hits
            return VisitList([v.card() for v in shown], len(hits))

    def search(self, query: str, status: Any, limit: int, include_archive: bool) -> SearchResult:
        q = query.lower()
        with self.lock:
            hits = [
                v
                for v in self.visits
                if (not isinstance(status, str) or v.status == status)
                and (q in v.site.lower() or q in v.issue.lower() or any(q in n.lower() for n in v.notes))
            ]
            shown = hits[:limit] if limit > 0 else hits
            out = SearchResult([v.card() for v in shown], len(hits))
        if include_archive:
            out.archive = [ArchivedVisit(*a) for a in ARCHIVE if q in a[1].lower() or q in a[2].lower()]
        return out

    # checks for the policy
    def check_open_visit(self, visit_id: Any) -> None:
        with self.lock:
            self._check_open_visit(visit_id)

    def check_assign(self, visit_id: Any, tech_id: Any) -> None:
        with self.lock:
            self._check_assign(visit_id, tech_id)

    def check_reschedule(self, visit_id: Any, date: Any, window: Any) -> None:
        with self.lock:
            self._check_open_visit(visit_id)
            if not valid_date(date) or window not in ("morning", "afternoon"):
                raise Refused("BAD_DATE", "The date is not a calendar date on or after %s." % TODAY)

    def describe(self, visit_id: Any) -> str:
        with self.lock:
            v = self._visit(visit_id)
            if v is None:
                return "%s (unknown visit)" % (visit_id if isinstance(visit_id, str) else "?")
            return "%s %s (%s, %s), %s %s" % (v.id, v.site, v.issue, v.priority, v.date, v.window)

    # changes (capability handlers)
    def assign(self, visit_id: Any, tech_id: Any) -> Assignment:
        with self.lock:
            self._writable()
            v, t = self._check_assign(visit_id, tech_id)
            v.technician = t.id
            v.status = "assigned"
            self.changes += 1
            return Assignment(v.id, t.id, t.name, "assigned", self._load(t.id))

    def reschedule(self, visit_id: Any, date: Any, window: Any) -> Rescheduled:
        with self.lock:
            self._writable()
            v = self._check_open_visit(visit_id)
            if not valid_date(date) or window not in ("morning", "afternoon"):
                raise Refused("BAD_DATE")
            out = Rescheduled(v.id, date, window, v.date, v.window)
            v.date, v.window = date, window
            self.changes += 1
            return out

    def add_note(self, visit_id: Any, text: Any) -> NoteAdded:
        with self.lock:
            self._writable()
            v = self._check_open_visit(visit_id)
            if not isinstance(text, str):
                raise Refused("BAD_INPUT")
            if len(v.notes) >= MAX_NOTES:
                raise Refused("NOTES_FULL")
            v.notes.append(text)
            self.changes += 1
            return NoteAdded(v.id, len(v.notes))

    def close(self, visit_id: Any, resolution: Any, summary: Any) -> Closed:
        with self.lock:
            self._writable()
            v = self._check_open_visit(visit_id)
            if not isinstance(resolution, str) or not isinstance(summary, str):
                raise Refused("BAD_INPUT")
            if len(v.notes) >= MAX_NOTES:
                raise Refused("NOTES_FULL")  # the summary is kept as the closing note
            v.status = "closed"
            v.resolution = resolution
            v.notes.append(summary)
            self.changes += 1
            return Closed(v.id, "closed", resolution)


# ======================================================================
# 3. The host: handlers and availability checks
# ======================================================================


def small_int(value: Any) -> int:
    """A small count from the input (a custom catalog may not bound it)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1000000:
        return int(value)
    return 0


class Host:
    """The desk's rcip side: handlers, availability, policy, dialog."""

    def __init__(self, desk: Desk) -> None:
        self.desk = desk
        self.lock = threading.Condition()
        self.workers: List[threading.Thread] = []
        # The dispatcher's answer to the next confirmation dialog ("approve",
        # "decline", or None: hold), and the future its outcome goes to.
        self.dialog: Optional[str] = None
        self.dialog_step = ""
        self.dialog_future: Optional[rcip.PendingOutcome] = None
        self.dialog_used = True
        self.closed: Dict[str, str] = {}  # confirmation id -> reason
        self.runtime: Optional[rcip.Runtime] = None
        # A plan step that cancels (cancelAfterMs): the next archive search
        # deferred to a worker scans until it sees the cancellation and
        # reports its start; the agent cancels after that report, so the
        # outcome does not depend on scheduling (as the C desk).
        self.scan_hold_armed = False
        self.scan_hold_taken = False
        self.scan_started = False

    # --- availability: sampled on every refresh and live at invoke time.

    def writable_available(self) -> rcip.Availability:
        if self.desk.is_read_only():
            return rcip.Availability(False, "DESK_READ_ONLY", "The desk is read-only while the nightly sync runs.")
        return rcip.Availability(True)

    def assign_available(self) -> rcip.Availability:
        if self.desk.is_read_only():
            return self.writable_available()
        if not self.desk.any_technician_free():
            return rcip.Availability(False, "NO_TECHNICIAN_FREE", "No technician on shift has a free slot.")
        return rcip.Availability(True)

    def close_available(self) -> rcip.Availability:
        if self.desk.is_read_only():
            return self.writable_available()
        closed = self.desk.focused_visit_closed()
        if closed:
            return rcip.Availability(False, "VISIT_ALREADY_CLOSED", "The open visit card (%s) is already closed." % closed)
        return rcip.Availability(True)

    # --- the archive search's worker thread (the handler defers to it)

    def archive_worker(self, inv: rcip.Invocation, query: str, status: Any, limit: int, hold: bool = False) -> None:
        try:
            # To the MCP client whose call this is (rcip): a log message,
            # and progress in milliseconds scanned (increasing); refusals
            # (the call was answered, the runtime closed) change nothing here.
            with contextlib.suppress(rcip.RcipError):
                inv.log("info", "Searching the archive", logger="dispatch_desk")
            waited = 0
            scan_ms = ARCHIVE_SCAN_MS
            if hold:
                scan_ms = int(OUTCOME_TIMEOUT_S * 1000)
                with self.lock:
                    self.scan_started = True
                    self.lock.notify_all()
            while waited < scan_ms:
                if waited % ARCHIVE_PROGRESS_MS == 0:
                    # A held scan (until the agent cancels) has no known total.
                    with contextlib.suppress(rcip.RcipError):
                        inv.report_progress(waited, None if hold else ARCHIVE_SCAN_MS, "Searching the archive")
                if inv.cancelled:
                    host_log("worker", "archive search cancelled after about %d ms: failing as aborted" % waited)
                    inv.fail(aborted=True)  # the outcome is failed EXECUTION_ABORTED
                    return
                time.sleep(ARCHIVE_POLL_MS / 1000)
                waited += ARCHIVE_POLL_MS
            output = self.desk.search(query, status, limit, True)
            host_log("worker", "archive search done: completing from the worker thread")
            with contextlib.suppress(rcip.RcipError):
                inv.report_progress(ARCHIVE_SCAN_MS, ARCHIVE_SCAN_MS, "Archive searched")
                inv.log("info", "Archive search done", logger="dispatch_desk")
            inv.complete(output)  # a dataclass: written with the declared JSON names
        finally:
            inv.close()

    # --- the host policy: the runtime-wide part checks writes against the
    # records (deny with the desk's reason); reschedule and close declare
    # needs_approval (their confirmation text below), so rcip composes
    # "confirm unless it is the approved re-run" on top.

    def check(self, request: rcip.PolicyRequest) -> rcip.Decision:
        cap = request.capability
        cap_id, effect = cap.get("id"), cap.get("effect")
        i = request.input if isinstance(request.input, dict) else {}
        if not cap_id or not effect:
            return rcip.deny("The request names no capability.")
        if effect == "read" or request.confirmed:
            return rcip.allow()
        visit_id = i.get("visitId")
        try:
            if cap_id == "visits.assignTechnician":
                self.desk.check_assign(visit_id, i.get("technicianId"))
                return rcip.allow()
            if cap_id == "visits.reschedule":
                self.desk.check_reschedule(visit_id, i.get("date"), i.get("window"))
                return rcip.allow()
            if cap_id in ("visits.addNote", "visits.close"):
                self.desk.check_open_visit(visit_id)
                return rcip.allow()
        except Refused as why:
            return rcip.deny(why.reason)
        if effect == "destructive":
            return rcip.confirm()
        return rcip.deny("This desk has no rule for that capability.")

    def reschedule_approval(self, request: rcip.PolicyRequest) -> str:
        i = request.input if isinstance(request.input, dict) else {}
        return "Move %s to %s %s? The customer is told by text message." % (self.desk.describe(i.get("visitId")), i.get("date"), i.get("window"))

    def close_approval(self, request: rcip.PolicyRequest) -> str:
        i = request.input if isinstance(request.input, dict) else {}
        resolution = i.get("resolution")
        return "Close %s as %s? A closed visit cannot be reopened." % (self.desk.describe(i.get("visitId")), resolution if isinstance(resolution, str) else "?")

    def logged(self, policy: Callable[[rcip.PolicyRequest], Any]) -> Callable[[rcip.PolicyRequest], Any]:
        """The composed policy, with each final decision in the transcript."""

        def log_and_decide(request: rcip.PolicyRequest) -> Any:
            decision = policy(request)
            d = decision if isinstance(decision, rcip.Decision) else rcip.Decision(str(decision))
            who = "%s%s%s" % (
                request.capability_id or "?", "" if request.invocation_id is not None else " (preflight)", " (approved re-run)" if request.confirmed else ""
            )  # fmt: skip
            host_log("policy", "%s -> %s%s" % (who, d.decision, ": " + d.reason if d.reason is not None else ""))
            return decision

        return log_and_decide

    # --- the confirmation dialog: told when a confirmation opens (with the
    # captured input) and when it ends; answers inline or holds it open.

    def arm_dialog(self, answer: Optional[str], step: str) -> rcip.PendingOutcome:
        future = rcip.PendingOutcome()
        future.set_running_or_notify_cancel()
        with self.lock:
            self.dialog, self.dialog_step, self.dialog_future, self.dialog_used = answer, step, future, False
        return future

    def disarm_dialog(self) -> bool:
        with self.lock:
            used = self.dialog_used
            self.dialog, self.dialog_future, self.dialog_used = None, None, True
            return used

    def on_confirmation(self, notice: rcip.ConfirmationNotice) -> None:
        if notice.event == "closed":
            if Out.json_mode:
                emit({"type": "dialog", "notice": notice.to_dict()})
            else:
                say("     %-9s closed %s: %s" % ("dialog", notice.confirmation_id, notice.reason))
            with self.lock:
                self.closed[notice.confirmation_id] = notice.reason or ""
                self.lock.notify_all()
            return
        with self.lock:
            answer, target, step = None, None, self.dialog_step
            if not self.dialog_used:
                answer, target = self.dialog, self.dialog_future
                self.dialog_used = True
        answer_name = answer or "hold"
        c = notice.confirmation
        if Out.json_mode:
            emit({"type": "dialog", "notice": notice.to_dict(), "answer": answer_name})
        else:
            say('     %-9s opened %s "%s" for %s' % ("dialog", notice.confirmation_id, c.title if c else "?", notice.capability_id))
            say('               "%s"' % (c.description if c else "?"))
            say(
                "               input %s; expires in about %d ms; dispatcher: %s"
                % (json.dumps(notice.input, ensure_ascii=False, separators=(",", ":")), (c.expires_at if c else 0) - now_ms(), answer_name)
            )
        if answer is not None and target is not None and self.runtime is not None:
            # Resolve from inside the callback: the outcome (the approved run,
            # or the decline) may arrive before this returns.
            self.runtime.host.submit_confirmation(
                notice.confirmation_id,
                answer == "approve",
                on_outcome=lambda outcome: (print_outcome(step, "dialog", outcome), target.set_result(outcome)),
            )

    def wait_closed(self, confirmation_id: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        with self.lock:
            while confirmation_id not in self.closed:
                left = deadline - time.monotonic()
                if left <= 0 or not self.lock.wait(left):
                    break
            return self.closed.get(confirmation_id, "")

    # --- lifecycle events and snapshot revisions

    @staticmethod
    def on_event(event: rcip.Event) -> None:
        if Out.json_mode:
            emit({"type": "event", "event": event.to_dict()})
        else:
            say(
                "     %-9s %-22s %-24s %s%s"
                % ("event", event.phase, event.capability_id, event.invocation_id, "  " + event.error_code if event.error_code else "")
            )

    @staticmethod
    def on_revision(revision: int) -> None:
        if Out.json_mode:
            emit({"type": "revision", "revision": revision})
        else:
            say("     %-9s snapshot revision %d" % ("refresh", revision))



# ======================================================================
# 3b. The declarations: the desk's capabilities as typed functions
# ======================================================================


def declare(host: Host) -> rcip.App:
    """The dispatch desk as an rcip application: the catalog (equal to
    examples-c/dispatch/catalog.json) and the handlers, from these
    functions. A handler returns its output (a dataclass) or raises
    (``EXECUTION_FAILED``; rcip takes no error text from handlers, so the
    desk logs its own reason)."""
    desk = host.desk
    app = rcip.App(
        "dispatchDesk",
        name="Dispatch desk",
        description="A maintenance-dispatch board: today's service visits, the technicians who do them, and the dispatcher's visit cards.",
        version="1.0.0",
        names="camelCase",
    )
    board = app.scope("board", title="Dispatch board", description="The overview of every open visit across technicians.")
    visits = app.scope("visits", title="Visit list", description="Searching and browsing visits, open or closed.", parent=board)
    detail = app.scope("visits.detail", title="Visit card", description="One visit the dispatcher has open: its technician, schedule, notes and closing.", parent=visits)
    roster = app.scope("technicians", title="Technician roster", description="Who is on shift, their skills and how many open visits each carries.", parent=board)

    def refused(cap_id: str, why: Refused) -> Refused:
        host_log("handler", "%s refused by the desk: %s" % (cap_id, why.status))
        return why

    @app.capability(
        id="board.listOpenVisits",
        scopes=[board],
        tags=["board", "visits"],
        when_to_use="To see what is still open on the board, e.g. every urgent visit, or the visits nobody is assigned to yet.",
        examples=[("Urgent visits only", {"priority": "urgent"}), ("Unassigned visits, at most five", {"unassignedOnly": True, "limit": 5})],
    )
    def list_open_visits(
        priority: Optional[Priority] = None, technician_id: Optional[TechnicianId] = None, unassigned_only: bool = False, limit: Optional[Limit] = None
    ) -> VisitList:
        """List open visits

        Lists visits that are not closed yet, in visit-id order, optionally filtered by priority or technician.
        """
        return desk.list_open(priority, technician_id, unassigned_only, limit or 0)

    @app.capability(
        id="visits.search",
        scopes=[visits],
        tags=["visits", "search"],
        when_to_use="To find a visit by customer, site or symptom before acting on it; add includeArchive only when the history matters (it takes a while and can be cancelled).",
        examples=[("Every visit about a boiler", {"query": "boiler"}), ("Past work at one site", {"query": "Harbor Bakery", "includeArchive": True})],
    )
    def search(
        invocation: rcip.Invocation,
        query: Annotated[str, rcip.Field(min_length=2, max_length=80)],
        status: Optional[VisitStatus] = None,
        include_archive: bool = False,
        limit: Optional[Limit] = None,
    ) -> Union[SearchResult, rcip.Invocation]:
        """Search visits

        Finds visits whose site, issue or notes contain the query (case-insensitive). With includeArchive it also searches last year's closed visits, which is slow.
        """
        if not include_archive:
            return desk.search(query, status, limit or 0, False)
        # The archive is slow: defer. The invocation moves to a worker
        # thread, which settles and closes it; this handler returns at once.
        with host.lock:
            hold = host.scan_hold_armed
            if hold:
                host.scan_hold_armed = False
                host.scan_hold_taken = True
            worker = threading.Thread(target=host.archive_worker, args=(invocation, query, status, limit or 0, hold))
            host.workers.append(worker)
        deferred = invocation.defer()
        worker.start()
        host_log("handler", "archive search handed to a worker thread (about %d ms)" % ARCHIVE_SCAN_MS)
        return deferred

    @app.capability(
        id="visits.assignTechnician",
        scopes=[detail, roster],
        effect="write",
        tags=["visits", "technicians"],
        availability=host.assign_available,
        when_to_use="When an open visit needs a technician, or a different one; unavailable while no technician on shift has a free slot.",
        examples=[("Give the bakery's cooler to Ben", {"visitId": "V-1003", "technicianId": "T-02"})],
    )
    def assign_technician(visit_id: VisitId, technician_id: TechnicianId) -> Assignment:
        """Assign a technician

        Assigns an on-shift technician with the right skill and a free slot to an open visit.
        """
        try:
            return desk.assign(visit_id, technician_id)
        except Refused as why:
            raise refused("visits.assignTechnician", why) from None

    @app.capability(
        id="visits.reschedule",
        scopes=[detail],
        effect="write",
        tags=["visits", "schedule"],
        needs_approval=host.reschedule_approval,
        availability=host.writable_available,
        when_to_use="When a visit cannot happen in its current slot; pick a date on or after the desk's today (2026-01-05).",
        examples=[("Move a visit to Wednesday afternoon", {"visitId": "V-1003", "date": "2026-01-07", "window": "afternoon"})],
    )
    def reschedule(visit_id: VisitId, date: IsoDate, window: Window, reason: Optional[Annotated[str, rcip.Field(max_length=200)]] = None) -> Rescheduled:
        """Reschedule a visit

        Moves an open visit to another day and time window; the dispatcher confirms, since the customer is notified.
        """
        try:
            return desk.reschedule(visit_id, date, window)
        except Refused as why:
            raise refused("visits.reschedule", why) from None

    @app.capability(
        id="visits.addNote",
        scopes=[detail],
        effect="write",
        tags=["visits", "notes"],
        availability=host.writable_available,
        when_to_use="To record what the customer or technician said, so the next person on the visit sees it.",
    )
    def add_note(visit_id: VisitId, text: Text) -> NoteAdded:
        """Add a note

        Adds a note to an open visit's card (at most 16 notes per visit).
        """
        try:
            return desk.add_note(visit_id, text)
        except Refused as why:
            raise refused("visits.addNote", why) from None

    @app.capability(
        id="visits.close",
        scopes=[detail],
        effect="destructive",
        tags=["visits"],
        needs_approval=host.close_approval,
        availability=host.close_available,
        when_to_use="Only when the work is done or the visit is void; unavailable when the open visit card is already closed or the desk is read-only.",
        examples=[("Close a fixed visit", {"visitId": "V-1003", "resolution": "fixed", "summary": "Compressor relay replaced; cooler holds 3 C."})],
    )
    def close(visit_id: VisitId, resolution: Resolution, summary: Text) -> Closed:
        """Close a visit

        Closes an open visit with a resolution and a summary note. A closed visit cannot be reopened, so the dispatcher confirms every close.
        """
        try:
            return desk.close(visit_id, resolution, summary)
        except Refused as why:
            raise refused("visits.close", why) from None

    return app


# For `python -m rcip serve bindings/python/examples/dispatch_desk.py:app`:
# the desk served to an MCP client over stdio, with the desk's own policy
# (its log on standard error).
host_for_serving = Host(Desk())
app = declare(host_for_serving)
app.runtime_policy(host_for_serving.check)

# ======================================================================
# 4. The plan (JSON Lines; README.md, "Plan files")
# ======================================================================

OPS = ["snapshot", "list", "set_context", "clear_context", "desk", "invoke", "resolve", "wait_expiry", "preflight", "sleep"]
OP_KEYS = {
    "snapshot": ["expect"],
    "list": ["filter", "expect"],
    "set_context": ["context", "expect"],
    "clear_context": ["expect"],
    "desk": ["readOnly", "technicianId", "onShift", "focusVisitId"],
    "invoke": ["capabilityId", "input", "inputRaw", "invocationId", "cancelAfterMs", "confirm", "expect"],
    "resolve": ["of", "approve", "expect"],
    "wait_expiry": ["of", "timeoutMs"],
    "preflight": ["proposals", "expect"],
    "sleep": ["ms"],
}
OUTCOME_STATUSES = ["succeeded", "failed", "denied", "confirmation_required"]
PREFLIGHT_STATUSES = ["ready", "confirmation_required", "blocked"]
ERROR_CODES = [
    "INVOCATION_ALREADY_ACTIVE", "INPUT_INVALID", "CAPABILITY_NOT_FOUND", "CAPABILITY_UNBOUND", "CAPABILITY_UNAVAILABLE",
    "POLICY_EVALUATION_FAILED", "POLICY_DENIED", "EXECUTION_ABORTED", "EXECUTION_FAILED", "OUTPUT_INVALID",
    "CONFIRMATION_DECLINED", "CONFIRMATION_EXPIRED", "CONFIRMATION_NOT_FOUND", "PREFLIGHT_STALE",
]  # fmt: skip
RESULT_NAMES = [r.name for r in rcip.Result]
MAX_LINE = 1024 * 1024


class PlanError(Exception):
    pass


# Raw JSON text spans: inputs, filters and contexts are passed "as written".
_WS = " \t\r\n"


def _skip_ws(s: str, i: int) -> int:
    while i < len(s) and s[i] in _WS:
        i += 1
    return i


def _skip_value(s: str, i: int) -> int:
    i = _skip_ws(s, i)
    c = s[i]
    if c == '"':
        i += 1
        while s[i] != '"':
            i += 2 if s[i] == "\\" else 1
        return i + 1
    if c in "{[":
        close = "}" if c == "{" else "]"
        i = _skip_ws(s, i + 1)
        if s[i] == close:
            return i + 1
        while True:
            if c == "{":
                i = _skip_ws(s, _skip_value(s, i))  # key
                i += 1  # ':'
            i = _skip_ws(s, _skip_value(s, i))
            if s[i] == close:
                return i + 1
            i += 1  # ','
    while i < len(s) and s[i] not in ",}] \t\r\n":
        i += 1
    return i


def raw_members(s: str) -> Dict[str, str]:
    """The raw text of each member of a JSON object text (last one wins)."""
    out: Dict[str, str] = {}
    i = _skip_ws(s, 0) + 1
    i = _skip_ws(s, i)
    if s[i] == "}":
        return out
    while True:
        key_end = _skip_value(s, i)
        key = json.loads(s[i:key_end])
        i = _skip_ws(s, key_end) + 1
        start = _skip_ws(s, i)
        end = _skip_value(s, start)
        out[key] = s[start:end]
        i = _skip_ws(s, end)
        if s[i] == "}":
            return out
        i = _skip_ws(s, i + 1)


def raw_elements(s: str) -> List[str]:
    out = []
    i = _skip_ws(s, _skip_ws(s, 0) + 1)
    if s[i] == "]":
        return out
    while True:
        end = _skip_value(s, i)
        out.append(s[i:end])
        i = _skip_ws(s, end)
        if s[i] == "]":
            return out
        i = _skip_ws(s, i + 1)


def _no_duplicates(pairs):
    seen = {}
    for k, v in pairs:
        if k in seen:
            raise PlanError('repeated key "%s"' % k[:60])
        seen[k] = v
    return seen


@dataclass
class Expect:
    status: str
    code: Optional[str] = None

    def text(self) -> str:
        return self.status + (" " + self.code if self.code else "")


@dataclass
class Step:
    line: int
    name: str
    op: str
    note: Optional[str]
    data: Dict[str, Any]
    raw: Dict[str, str]
    expect_result: Optional[str] = None
    expect: Optional[Expect] = None
    dialog: Optional[str] = None  # "approve" / "decline"
    dialog_expect: Optional[Expect] = None
    input_text: Optional[str] = None
    proposals: List[Tuple[str, str]] = field(default_factory=list)
    expect_outcomes: Optional[List[Expect]] = None


def _keys(obj: Dict[str, Any], allowed: List[str], where: str, top: bool = False) -> None:
    for key in obj:
        if key not in allowed and not (top and key in ("step", "op", "note")):
            raise PlanError('unknown key "%s" in %s (accepted: %s%s)' % (key[:60], where, "step, op, note, " if top else "", ", ".join(allowed)))


def _get(obj: Dict[str, Any], key: str, kind: type, required: bool, where: str) -> Any:
    if key not in obj:
        if required:
            raise PlanError('%s needs "%s"' % (where, key))
        return None
    value = obj[key]
    ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if kind is int and isinstance(value, float) and value.is_integer():
        value, ok = int(value), True
    if not ok:
        raise PlanError('"%s" in %s must be %s' % (key, where, {str: "a string", bool: "a boolean", int: "an integer", dict: "an object", list: "an array"}[kind]))
    return value


def _expect(value: Any, statuses: List[str], where: str) -> Expect:
    if not isinstance(value, dict):
        raise PlanError("%s must be an object" % where)
    _keys(value, ["status", "code"], where)
    status = _get(value, "status", str, True, where)
    code = _get(value, "code", str, False, where)
    if status not in statuses:
        raise PlanError('unknown status "%s" in %s (one of: %s)' % (status[:60], where, ", ".join(statuses)))
    if code is not None and code not in ERROR_CODES:
        raise PlanError('unknown error code "%s" in %s (one of: %s)' % (code[:60], where, ", ".join(ERROR_CODES)))
    return Expect(status, code)


def _input_text(obj: Dict[str, Any], raw: Dict[str, str], where: str) -> str:
    if "input" in obj and "inputRaw" in obj:
        raise PlanError('%s has both "input" and "inputRaw": give one' % where)
    if "inputRaw" in obj:
        if not isinstance(obj["inputRaw"], str) or "\0" in obj["inputRaw"]:
            raise PlanError('"inputRaw" in %s must be a string without NUL characters' % where)
        return obj["inputRaw"]
    if "input" not in obj:
        raise PlanError('%s needs "input" (the capability input) or "inputRaw"' % where)
    return raw["input"]


def parse_step(line_no: int, text: str, steps: List[Step]) -> Step:
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates)
    except ValueError as exc:
        raise PlanError("not JSON: %s" % exc) from None
    if not isinstance(data, dict):
        raise PlanError("a step is a JSON object")
    op = _get(data, "op", str, True, "a step")
    if op not in OPS:
        raise PlanError('unknown op "%s" (one of: %s)' % (op[:60], ", ".join(OPS)))
    where = "a%s %s step" % ("n" if op[0] in "aeiou" else "", op)
    _keys(data, OP_KEYS[op], where, top=True)
    name = _get(data, "step", str, False, "a step")
    note = _get(data, "note", str, False, "a step")
    if name is not None:
        if not name:
            raise PlanError('"step" must not be empty')
        for s in steps:
            if s.name == name:
                raise PlanError('step name "%s" is already used on line %d' % (name[:60], s.line))
    step = Step(line_no, name if name is not None else "line %d" % line_no, op, note, data, raw_members(text))
    expect = _get(data, "expect", dict, False, where)

    def result_expect(e: Dict[str, Any]) -> None:
        r = _get(e, "result", str, False, '"expect"')
        if r is not None and r not in RESULT_NAMES:
            raise PlanError('unknown result "%s" in "expect" (one of: %s)' % (r[:60], ", ".join(RESULT_NAMES)))
        step.expect_result = r

    if op == "snapshot" and expect is not None:
        _keys(expect, ["available"], '"expect"')
        ids = _get(expect, "available", list, False, '"expect"')
        if ids is not None and not all(isinstance(x, str) for x in ids):
            raise PlanError('"available" in "expect" lists capability ids (strings)')
    elif op == "list":
        if expect is not None:
            _keys(expect, ["ids", "result"], '"expect"')
            ids = _get(expect, "ids", list, False, '"expect"')
            if ids is not None and not all(isinstance(x, str) for x in ids):
                raise PlanError('"ids" in "expect" lists capability ids (strings)')
            result_expect(expect)
    elif op in ("set_context", "clear_context"):
        if op == "set_context" and "context" not in data:
            raise PlanError('%s needs "context"' % where)
        if expect is not None:
            _keys(expect, ["result"], '"expect"')
            result_expect(expect)
    elif op == "desk":
        for key, kind in (("readOnly", bool), ("technicianId", str), ("onShift", bool), ("focusVisitId", str)):
            _get(data, key, kind, False, where)
        if ("technicianId" in data) != ("onShift" in data):
            raise PlanError('a desk step gives "technicianId" and "onShift" together')
        if not any(k in data for k in ("readOnly", "technicianId", "focusVisitId")):
            raise PlanError('a desk step changes something: "readOnly", "technicianId" + "onShift", or "focusVisitId"')
    elif op == "invoke":
        _get(data, "capabilityId", str, True, where)
        _get(data, "invocationId", str, False, where)
        cancel = _get(data, "cancelAfterMs", int, False, where)
        if cancel is not None and not 0 <= cancel <= 60000:
            raise PlanError('"cancelAfterMs" in %s must be 0 to 60000' % where)
        step.input_text = _input_text(data, step.raw, where)
        confirm = _get(data, "confirm", dict, False, where)
        if confirm is not None:
            _keys(confirm, ["approve", "expect"], '"confirm"')
            step.dialog = "approve" if _get(confirm, "approve", bool, True, '"confirm"') else "decline"
            if "expect" in confirm:
                step.dialog_expect = _expect(confirm["expect"], OUTCOME_STATUSES, '"expect" in "confirm"')
        if expect is not None:
            step.expect = _expect(expect, OUTCOME_STATUSES, '"expect"')
    elif op in ("resolve", "wait_expiry"):
        of = _get(data, "of", str, True, where)
        if op == "resolve":
            _get(data, "approve", bool, True, where)
            if expect is not None:
                step.expect = _expect(expect, OUTCOME_STATUSES, '"expect"')
        else:
            t = _get(data, "timeoutMs", int, False, where)
            if t is not None and not 1 <= t <= 600000:
                raise PlanError('"timeoutMs" in %s must be 1 to 600000' % where)
        target = next((s for s in steps if s.name == of), None)
        if target is None:
            raise PlanError('"of": no earlier step is named "%s"' % of[:60])
        if target.op != "invoke":
            raise PlanError('"of": step "%s" is a %s step, not an invoke step' % (of[:60], target.op))
    elif op == "preflight":
        proposals = _get(data, "proposals", list, True, where)
        if len(proposals) > 17:
            raise PlanError('"proposals" lists at most 17 proposals')
        for k, (p, raw) in enumerate(zip(proposals, raw_elements(step.raw["proposals"]))):
            pwhere = "proposal %d" % k
            if not isinstance(p, dict):
                raise PlanError("%s must be an object" % pwhere)
            _keys(p, ["capabilityId", "input", "inputRaw"], pwhere)
            step.proposals.append((_get(p, "capabilityId", str, True, pwhere), _input_text(p, raw_members(raw), pwhere)))
        if expect is not None:
            _keys(expect, ["result", "consistent", "outcomes"], '"expect"')
            result_expect(expect)
            _get(expect, "consistent", bool, False, '"expect"')
            outcomes = _get(expect, "outcomes", list, False, '"expect"')
            if outcomes is not None:
                step.expect_outcomes = [_expect(o, PREFLIGHT_STATUSES, '"outcomes"') for o in outcomes]
    elif op == "sleep":
        ms = _get(data, "ms", int, True, where)
        if not 0 <= ms <= 60000:
            raise PlanError('"ms" in %s must be 0 to 60000' % where)
    return step


def load_plan(path: str) -> List[Step]:
    try:
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")
    except OSError as exc:
        raise PlanError("%s: cannot open: %s" % (path, exc.strerror)) from None
    steps: List[Step] = []
    for n, raw_line in enumerate(lines, 1):
        try:
            if len(raw_line) > MAX_LINE:
                raise PlanError("line longer than %d bytes" % MAX_LINE)
            if b"\0" in raw_line:
                raise PlanError("NUL byte in the line")
            text = raw_line.decode("utf-8").rstrip("\r\n")
            if not text.strip(" \t\r\n"):
                continue
            steps.append(parse_step(n, text, steps))
        except (PlanError, UnicodeDecodeError) as exc:
            raise PlanError("%s:%d: %s" % (path, n, exc)) from None
    if not steps:
        raise PlanError("%s: the plan has no steps" % path)
    return steps


# ======================================================================
# 5. The plan runner (the agent's side)
# ======================================================================


class Runner:
    def __init__(self, runtime: rcip.Runtime, host: Host, steps: List[Step], bindings: Dict[str, rcip.Binding], ttl_ms: int) -> None:
        self.runtime = runtime
        self.client = runtime.client
        self.host_api = runtime.host
        self.host = host
        self.steps = steps
        self.bindings = bindings
        self.ttl_ms = ttl_ms
        self.outcomes: Dict[str, rcip.Outcome] = {}
        self.last_snapshot: Optional[rcip.Snapshot] = None
        self.mismatches: List[Step] = []

    def check(self, step: Step, ok: bool, expected: str, got: str) -> None:
        if not ok:
            self.mismatches.append(step)
        if Out.json_mode:
            emit({"type": "check", "step": step.name, "line": step.line, "ok": ok, "expected": expected, "got": got})
        elif ok:
            say("     %-9s %s" % ("ok", expected))
        else:
            say("  !! MISMATCH  expected %s, got %s (line %d)" % (expected, got, step.line))

    def check_result(self, step: Step, call: str, error: Optional[rcip.RcipError]) -> bool:
        name = result_name(error)
        if error is not None:
            if Out.json_mode:
                emit({"type": "result", "step": step.name, "call": call, "result": name, "message": error.message})
            else:
                say("  => %-9s %s: %s" % (call, name, error.message))
        expected = step.expect_result or "OK"
        if error is not None or step.expect_result:
            self.check(step, expected == name, "result " + expected, "result " + name)
        return error is None

    def check_outcome(self, step: Step, expect: Optional[Expect], outcome: Optional[rcip.Outcome]) -> None:
        if expect is None:
            return
        if outcome is None:
            self.check(step, False, expect.text(), "no outcome in time")
            return
        ok = outcome.status == expect.status and (expect.code is None or outcome.code == expect.code)
        self.check(step, ok, expect.text(), outcome_summary(outcome.to_dict()))

    @staticmethod
    def wait(future: "rcip.PendingOutcome", timeout: float = OUTCOME_TIMEOUT_S) -> Any:
        try:
            return future.result(timeout)
        except Exception:  # noqa: BLE001 - a timeout: reported as a difference
            return None

    def run(self, index: int) -> None:
        step = self.steps[index]
        if Out.json_mode:
            record = {"type": "step", "index": index + 1, "line": step.line, "step": step.name, "op": step.op}
            if step.note is not None:
                record["note"] = step.note
            emit(record)
        else:
            say()
            say("[%d] %s  (%s, line %d)" % (index + 1, step.name, step.op, step.line))
            if step.note is not None:
                say("     # %s" % step.note)
        getattr(self, "op_" + step.op)(step)

    def call(self, step: Step, name: str, fn, *args) -> Tuple[bool, Any]:
        try:
            value = fn(*args)
        except rcip.RcipError as error:
            return self.check_result(step, name, error), None
        return self.check_result(step, name, None), value

    def op_snapshot(self, step: Step) -> None:
        ok, snap = self.call(step, "rcip_client_snapshot", self.client.snapshot)
        if not ok:
            return
        shared = snap is self.last_snapshot  # the same object until the revision changes
        data = snap.to_dict()
        available = [c["id"] for c in data["capabilities"] if c.get("available")]
        if Out.json_mode:
            caps = []
            for c in data["capabilities"]:
                entry = {"id": c["id"], "effect": c["effect"], "bound": c["bound"], "available": c["available"], "relevance": c["relevance"]}
                code = (c.get("availability") or {}).get("reasonCode")
                if code is not None:
                    entry["reasonCode"] = code
                caps.append(entry)
            emit({"type": "snapshot", "step": step.name, "revision": snap.revision, "shared": shared, "context": data["context"], "capabilities": caps})
        else:
            say(
                "     snapshot revision %d%s; context %s"
                % (snap.revision, " (unchanged: the same shared snapshot as before)" if shared else "", json.dumps(data["context"]["activeScopeIds"], separators=(",", ":")))
            )
            for c in data["capabilities"]:
                availability = c.get("availability") or {}
                code = availability.get("reasonCode")
                say(
                    "       %-24s %-11s %-7s %-7s %s%s"
                    % (c["id"], c["effect"], c["relevance"], "bound" if c["bound"] else "unbound", "available" if c["available"] else "unavailable", " " + code if code else "")
                )
                if availability.get("reason"):
                    say("       %-24s %s" % ("", availability["reason"]))
        want = (step.data.get("expect") or {}).get("available")
        if want is not None:
            self.check(step, sorted(want) == sorted(available), "available [%s]" % ", ".join(want), "available [%s]" % ", ".join(available))
        self.last_snapshot = snap

    def op_list(self, step: Step) -> None:
        filter_text = step.raw.get("filter")
        say("     filter %s" % (filter_text or "(none)"))
        ok, listed = self.call(step, "rcip_client_list_capabilities", self.client.list_capabilities, filter_text)
        if not ok:
            return
        ids = [c.get("id", "?") for c in listed]
        if Out.json_mode:
            emit({"type": "list", "step": step.name, "ids": ids})
        else:
            say("  => %-9s [%s]" % ("ids", ", ".join(ids)))
        want = (step.data.get("expect") or {}).get("ids")
        if want is not None:
            self.check(step, want == ids, "ids [%s]" % ", ".join(want), "ids [%s]" % ", ".join(ids))

    def op_set_context(self, step: Step) -> None:
        say("     context %s" % step.raw["context"])
        self.call(step, "rcip_host_set_context", self.host_api.set_context, step.raw["context"])

    def op_clear_context(self, step: Step) -> None:
        self.call(step, "rcip_host_clear_context", self.host_api.clear_context)

    def op_desk(self, step: Step) -> None:
        d = step.data
        desk = self.host.desk
        if "readOnly" in d:
            desk.set_read_only(d["readOnly"])
            host_log("desk", "desk is now %s; rcip_host_refresh (several capabilities change)" % ("read-only" if d["readOnly"] else "writable"))
            self.call(step, "rcip_host_refresh", self.host_api.refresh)
        if "technicianId" in d:
            if not desk.set_on_shift(d["technicianId"], d["onShift"]):
                self.check(step, False, "a known technician", d["technicianId"])
            elif "visits.assignTechnician" in self.bindings:
                # Only assignTechnician depends on shifts: bump its binding revision.
                revision = desk.change_count()
                host_log("desk", "%s is now %s; rcip_binding_set_revision(assign, %d)" % (d["technicianId"], "on shift" if d["onShift"] else "off shift", revision))
                self.call(step, "rcip_binding_set_revision", self.bindings["visits.assignTechnician"].set_revision, revision)
        if "focusVisitId" in d:
            visit_id = d["focusVisitId"]
            if not desk.set_focus(visit_id):
                self.check(step, False, "a known visit", visit_id)
            elif "visits.close" in self.bindings:
                revision = desk.change_count()
                host_log("desk", "visit card %s%s; rcip_binding_set_revision(close, %d)" % ("opened: " if visit_id else "closed", visit_id, revision))
                self.call(step, "rcip_binding_set_revision", self.bindings["visits.close"].set_revision, revision)

    def op_invoke(self, step: Step) -> None:
        d = step.data
        say("     %s %s%s" % (d["capabilityId"], step.input_text, "  invocation id " + d["invocationId"] if "invocationId" in d else ""))
        # A token only when the plan cancels.
        token = rcip.CancelToken() if "cancelAfterMs" in d else None
        if token is not None:
            with self.host.lock:
                self.host.scan_hold_armed, self.host.scan_hold_taken, self.host.scan_started = True, False, False
        dialog_future = self.host.arm_dialog(step.dialog, step.name) if step.dialog else None
        try:
            future = self.client.submit(
                d["capabilityId"],
                input_json=step.input_text,
                invocation_id=d.get("invocationId"),
                cancel=token,
                on_outcome=lambda outcome: print_outcome(step.name, "invoke", outcome),  # as rcip delivers it
            )
        except rcip.RcipError as error:
            self.host.disarm_dialog()
            self.check_result(step, "rcip_client_invoke", error)
            return
        if token is not None:
            # A deferred archive search: cancel once its worker has started.
            with self.host.lock:
                self.host.scan_hold_armed = False
                if self.host.scan_hold_taken and not self.host.lock.wait_for(lambda: self.host.scan_started, OUTCOME_TIMEOUT_S):
                    self.check(step, False, "the archive worker to start", "not in time")
                self.host.scan_hold_taken = False
            if d["cancelAfterMs"] > 0:
                time.sleep(d["cancelAfterMs"] / 1000)
            host_log("agent", "cancels its token after %d ms" % d["cancelAfterMs"])
            token.cancel()
        outcome = self.wait(future)
        if outcome is not None:
            self.outcomes[step.name] = outcome
        self.check_outcome(step, step.expect, outcome)
        if dialog_future is not None:
            resolution = None
            if self.host.disarm_dialog():
                resolution = self.wait(dialog_future)
                if resolution is None:
                    self.check(step, False, "a dialog outcome", "none in time")
            else:
                self.check(step, False, "a confirmation dialog", "no confirmation opened")
            if resolution is not None:
                self.check_outcome(step, step.dialog_expect, resolution)
        self.host.disarm_dialog()
        if token is not None:
            token.close()  # the invocation keeps its own reference

    def confirmation_of(self, step: Step) -> Optional[str]:
        outcome = self.outcomes.get(step.data["of"])
        if outcome is None or outcome.confirmation is None:
            self.check(step, False, 'a confirmation_required outcome in step "of"', "none")
            return None
        return outcome.confirmation.id

    def op_resolve(self, step: Step) -> None:
        cid = self.confirmation_of(step)
        if cid is None:
            return
        approve = step.data["approve"]
        host_log("dispatcher", "%s %s (from step %s)" % ("approves" if approve else "declines", cid, step.data["of"]))
        try:
            future = self.host_api.submit_confirmation(cid, approve, on_outcome=lambda outcome: print_outcome(step.name, "resolve", outcome))
        except rcip.RcipError as error:
            self.check_result(step, "rcip_host_resolve_confirmation", error)
            return
        self.check_outcome(step, step.expect, self.wait(future))

    def op_wait_expiry(self, step: Step) -> None:
        cid = self.confirmation_of(step)
        if cid is None:
            return
        # The wait ends with the closed notice; the bound is generous (a
        # timer thread running late on a loaded machine), at least 30 s.
        timeout = step.data.get("timeoutMs") or max(self.ttl_ms + 5000, int(OUTCOME_TIMEOUT_S * 1000))
        host_log("agent", "waits up to %d ms for %s to expire" % (timeout, cid))
        reason = self.host.wait_closed(cid, timeout / 1000)
        self.check(step, reason == "expired", "closed: expired", reason or "still pending")

    def op_preflight(self, step: Step) -> None:
        for k, (cap, text) in enumerate(step.proposals):
            say("     proposal %d: %s %s" % (k, cap, text))
        proposals = [rcip.Proposal(cap, input_json=text) for cap, text in step.proposals]
        ok, future = self.call(step, "rcip_client_preflight", self.client.submit_preflight, proposals)
        if not ok:
            return
        report = self.wait(future)
        if report is None:
            self.check(step, False, "a preflight report", "none in time")
            return
        r = report.to_dict()
        if Out.json_mode:
            emit({"type": "report", "step": step.name, "report": r})
        else:
            say("  => %-9s revision %d, consistent %s" % ("report", r["revision"], "true" if r["consistent"] else "false"))
            for k, o in enumerate(r["outcomes"]):
                code = (o.get("error") or {}).get("code")
                say("            %d %-24s %s%s%s" % (k, o.get("capabilityId", "?"), o.get("status", "?"), " " + code if code else "", ": " + o["reason"] if "reason" in o else ""))
        expect = step.data.get("expect") or {}
        if "consistent" in expect:
            want, got = expect["consistent"], bool(r["consistent"])
            self.check(step, want == got, "consistent" if want else "not consistent", "consistent" if got else "not consistent")
        if step.expect_outcomes is not None:
            outcomes = r["outcomes"]
            if len(outcomes) != len(step.expect_outcomes):
                self.check(step, False, "%d outcomes" % len(step.expect_outcomes), "%d outcomes" % len(outcomes))
            else:
                ok = all(
                    o.get("status") == e.status and (e.code is None or (o.get("error") or {}).get("code") == e.code) for o, e in zip(outcomes, step.expect_outcomes)
                )
                self.check(step, ok, ", ".join(e.text() for e in step.expect_outcomes), ", ".join(outcome_summary(o) for o in outcomes))

    def op_sleep(self, step: Step) -> None:
        time.sleep(step.data["ms"] / 1000)


# ======================================================================
# 6. main
# ======================================================================


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description="Runs an agent plan against the dispatch desk and checks every outcome.")
    parser.add_argument("--json", action="store_true", help="print the transcript as JSON lines")
    parser.add_argument("--ttl-ms", type=int, default=DEFAULT_TTL_MS, help="confirmation lifetime in ms (default %(default)s)")
    parser.add_argument("--catalog", default=None, help="a catalog file instead of the declared one (the declared handlers are bound to it)")
    parser.add_argument("--plan", default=os.path.join(REPO, "examples-c", "dispatch", "plan.jsonl"))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    if not 1 <= args.ttl_ms <= 3600000:
        print("dispatch_desk: --ttl-ms takes 1 to 3600000", file=sys.stderr)
        return 2
    Out.json_mode = args.json
    Out.stream = sys.stdout

    # Read the whole plan first: a bad line stops us before anything runs.
    desk = Desk()
    host = Host(desk)
    app = declare(host)  # the catalog and the handlers, from typed functions
    catalog_name = args.catalog or "(declared in dispatch_desk.py)"
    try:
        steps = load_plan(args.plan)
        if args.catalog is not None:
            with open(args.catalog, "rb") as f:
                catalog_text = f.read()
        else:
            catalog_text = app.to_json().encode("utf-8")
    except PlanError as exc:
        print("dispatch_desk: %s" % exc, file=sys.stderr)
        return 2
    except OSError as exc:
        print("dispatch_desk: %s: cannot open: %s" % (args.catalog, exc.strerror), file=sys.stderr)
        return 2

    # 1. The catalog: checked and compiled once.
    try:
        catalog = rcip.Catalog(catalog_text)
    except rcip.RcipError as error:
        print("dispatch_desk: rcip_catalog_new failed: %s (%s)" % (result_name(error), error.message), file=sys.stderr)
        for p in rcip.Catalog.check(catalog_text).problems:
            print("  %s: %s: %s (%s)" % (catalog_name, p.pointer, p.message, p.rule), file=sys.stderr)
        return 2

    # 2. The runtime: system clock and the library's own expiry timer. The
    # policy: the desk's checks composed with the declared needs_approval.
    runtime = rcip.Runtime(
        catalog,
        confirmation_ttl_ms=args.ttl_ms,
        policy=host.logged(app.policy(host.check)),
        on_confirmation=host.on_confirmation,
        on_event=host.on_event,
        # Handlers already logged their desk refusals; anything else a callback
        # raises goes to the transcript instead of the default logger.
        on_error=lambda exc, where: None if isinstance(exc, Refused) else host_log("host", "%s raised %r" % (where, exc)),
    )
    catalog.close()  # the runtime keeps its own reference
    host.runtime = runtime

    # 3. Bind the declared handlers to the catalog's capabilities.
    bindings: Dict[str, rcip.Binding] = {}
    for cap in app.capabilities:
        try:
            bindings[cap.id] = runtime.host.bind(cap.id, cap.handler(), cap.availability)
        except rcip.NotInCatalogError:
            print("dispatch_desk: note: the catalog does not declare %s: not bound" % cap.id, file=sys.stderr)
    # 4. Watch snapshot revisions (after binding: binding refreshes too).
    subscription = runtime.client.subscribe(host.on_revision)

    # 5. Run the plan.
    if Out.json_mode:
        emit(
            {
                "type": "start", "rcip": rcip.library_version(), "abi": rcip.abi_version(), "catalog": catalog_name,
                "plan": args.plan, "steps": len(steps), "bound": len(bindings), "confirmationTtlMs": args.ttl_ms,
            }
        )  # fmt: skip
    else:
        say("rcip %s (Python binding): dispatch desk with %d visits and %d technicians" % (rcip.library_version(), len(desk.visits), len(desk.technicians)))
        say("catalog %s (%d capabilities bound), plan %s (%d steps), confirmation TTL %d ms" % (catalog_name, len(bindings), args.plan, len(steps), args.ttl_ms))
    runner = Runner(runtime, host, steps, bindings, args.ttl_ms)
    for i in range(len(steps)):
        runner.run(i)

    # 6. Summary, with the runtime's own counters.
    stats = runtime.stats()
    if Out.json_mode:
        emit({"type": "summary", "steps": len(steps), "mismatches": len(runner.mismatches), "mismatchedSteps": [s.name for s in runner.mismatches], "stats": stats})
    else:
        say()
        say("runtime stats: %s" % json.dumps(stats, separators=(",", ":")))
        if not runner.mismatches:
            say("all %d steps went as the plan expected" % len(steps))
        else:
            say("%d check(s) differed from the plan:" % len(runner.mismatches))
            for s in runner.mismatches:
                say("  line %d: %s" % (s.line, s.name))

    # Teardown: stop listening, let workers finish (they hold invocations),
    # close the runtime (pending work gets its outcome now), then the handles.
    subscription.close()
    with host.lock:
        workers = list(host.workers)
    for w in workers:
        w.join()
    runtime.close()
    for b in bindings.values():
        b.close()
    return 1 if runner.mismatches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
