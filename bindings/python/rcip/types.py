"""Small typed values: outcomes, reports, events, notices, decisions."""

from __future__ import annotations

import copy
import enum
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union

from . import _json


class Status(str, enum.Enum):
    """An outcome's ``status``. A ``str``: ``outcome.status == "succeeded"`` works."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DENIED = "denied"
    CONFIRMATION_REQUIRED = "confirmation_required"

    def __str__(self) -> str:
        return self.value


class Effect(str, enum.Enum):
    """A capability's ``effect``. A ``str``, like ``Status``."""

    READ = "read"
    WRITE = "write"
    EXTERNAL = "external"
    DESTRUCTIVE = "destructive"

    def __str__(self) -> str:
        return self.value


class Phase(str, enum.Enum):
    """A lifecycle event's ``phase`` (``rcip_event_callback`` in rcip.h has
    the sequences). A ``str``: ``event.phase == "started"`` works."""

    REQUESTED = "requested"
    STARTED = "started"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DENIED = "denied"
    CONFIRMATION_REQUESTED = "confirmation_requested"
    CONFIRMATION_DECLINED = "confirmation_declined"

    def __str__(self) -> str:
        return self.value


class PreflightStatus(str, enum.Enum):
    """One preflight outcome's ``status``."""

    READY = "ready"
    CONFIRMATION_REQUIRED = "confirmation_required"
    BLOCKED = "blocked"

    def __str__(self) -> str:
        return self.value


DecisionName = Literal["allow", "deny", "confirm"]
"""A policy decision's name."""

NoticeEvent = Literal["opened", "closed"]
CloseReason = Literal["approved", "declined", "expired", "cancelled", "invalidated", "closed"]
"""Why a confirmation closed (``ConfirmationNotice.reason``)."""


def _enum(cls: Any, value: Any) -> Any:
    try:
        return cls(value)
    except ValueError:
        raise ValueError("rcip: the library wrote %r, which is no %s" % (value, cls.__name__)) from None


@dataclass(frozen=True)
class RawJson:
    """Payload text passed through unchanged: return it from a handler (its
    output text) or pass it as ``input`` (the input text). Text that is not a
    JSON value becomes an ``OUTPUT_INVALID`` / ``INPUT_INVALID`` outcome."""

    text: Union[str, bytes]


@dataclass(frozen=True)
class ValidationIssue:
    instance_path: str
    keyword: str
    message: str

    @classmethod
    def _from(cls, d: Mapping[str, Any]) -> "ValidationIssue":
        return cls(d.get("instancePath", ""), d.get("keyword", ""), d.get("message", ""))


@dataclass(frozen=True)
class OutcomeError:
    """``{"code", "message", "validationIssues"?, "validationIssuesTruncated"?}``:
    ``code`` is the stable RCIP error code (``INPUT_INVALID``,
    ``POLICY_DENIED``, ...); ``validation_issues`` is ``()`` when the error
    has none (every error but ``INPUT_INVALID`` / ``OUTPUT_INVALID``, and
    those for text that is not JSON), so it can always be iterated.
    ``validation_issues_truncated`` (**rcip**) is true when the runtime's
    issue bound (``Runtime(max_issues=..., max_issue_bytes=...)``, default
    1000 issues and 1 MiB of issue text) left issues out: the ones kept are
    the first of the full list."""

    code: str
    message: str
    validation_issues: Tuple[ValidationIssue, ...] = ()
    validation_issues_truncated: bool = False

    @classmethod
    def _from(cls, d: Optional[Mapping[str, Any]]) -> Optional["OutcomeError"]:
        if d is None:
            return None
        issues = d.get("validationIssues")
        return cls(
            d.get("code", ""),
            d.get("message", ""),
            () if issues is None else tuple(ValidationIssue._from(i) for i in issues),
            d.get("validationIssuesTruncated") is True,
        )


@dataclass(frozen=True)
class Confirmation:
    """A pending confirmation as the consumer sees it; ``expires_at`` in epoch ms."""

    id: str
    title: str
    description: str
    effect: Effect
    expires_at: int

    @classmethod
    def _from(cls, d: Optional[Mapping[str, Any]]) -> Optional["Confirmation"]:
        if d is None:
            return None
        return cls(d.get("id", ""), d.get("title", ""), d.get("description", ""), _enum(Effect, d.get("effect")), d.get("expiresAt", 0))


@dataclass(frozen=True)
class Outcome:
    """One invocation's outcome (the outcome record of conformance/FORMAT.md)."""

    status: Status
    invocation_id: str
    capability_id: str
    output: Any = None
    error: Optional[OutcomeError] = None
    confirmation: Optional[Confirmation] = None
    json: str = field(default="", repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == Status.SUCCEEDED

    @property
    def code(self) -> Optional[str]:
        """The error code, or ``None`` for ``succeeded`` and ``confirmation_required``."""
        return None if self.error is None else self.error.code

    def to_dict(self) -> Dict[str, Any]:
        """The record as the library wrote it (a fresh copy)."""
        record: Dict[str, Any] = _json.loads(self.json)
        return record

    @classmethod
    def from_json(cls, text: str) -> "Outcome":
        d = _json.loads(text)
        return cls(
            _enum(Status, d.get("status")),
            d.get("invocationId", ""),
            d.get("capabilityId", ""),
            d.get("output"),
            OutcomeError._from(d.get("error")),
            Confirmation._from(d.get("confirmation")),
            text,
        )


@dataclass(frozen=True)
class PreflightOutcome:
    status: PreflightStatus
    capability_id: str
    effect: Optional[Effect] = None
    reason: Optional[str] = None
    error: Optional[OutcomeError] = None


@dataclass(frozen=True)
class PreflightReport:
    revision: int
    checked_at: int
    consistent: bool
    outcomes: Tuple[PreflightOutcome, ...]
    json: str = field(default="", repr=False, compare=False)

    def to_dict(self) -> Dict[str, Any]:
        record: Dict[str, Any] = _json.loads(self.json)
        return record

    @classmethod
    def from_json(cls, text: str) -> "PreflightReport":
        d = _json.loads(text)
        return cls(
            d.get("revision", 0),
            d.get("checkedAt", 0),
            bool(d.get("consistent")),
            tuple(
                PreflightOutcome(
                    _enum(PreflightStatus, o.get("status")),
                    o.get("capabilityId", ""),
                    None if o.get("effect") is None else _enum(Effect, o.get("effect")),
                    o.get("reason"),
                    OutcomeError._from(o.get("error")),
                )
                for o in d.get("outcomes", [])
            ),
            text,
        )


@dataclass(frozen=True)
class Proposal:
    """One preflight proposal; ``input_json`` (raw text) wins over ``input``."""

    capability_id: str
    input: Any = None
    input_json: Optional[Union[str, bytes]] = None


@dataclass(frozen=True)
class Progress:
    """A handler's progress report, as the runtime's ``on_progress``
    observer gets it (**rcip**; never a lifecycle event). Units are the
    handler's; ``progress`` increases from report to report."""

    invocation_id: str
    capability_id: str
    progress: float
    total: Optional[float] = None
    message: Optional[str] = None

    @classmethod
    def from_json(cls, text: str) -> "Progress":
        d = _json.loads(text)
        return cls(d.get("invocationId", ""), d.get("capabilityId", ""), d.get("progress", 0), d.get("total"), d.get("message"))


@dataclass(frozen=True)
class ElicitResult:
    """The user's answer to ``Invocation.elicit`` (**rcip**): ``action`` is
    ``"accept"`` (then ``content`` is the object the client sent, not
    validated against the requested schema), ``"decline"`` or ``"cancel"``
    (also when the call was cancelled, the handler settled first, or the
    session ended)."""

    action: Literal["accept", "decline", "cancel"]
    content: Optional[Dict[str, Any]] = None

    @property
    def accepted(self) -> bool:
        return self.action == "accept"

    @classmethod
    def from_json(cls, text: str) -> "ElicitResult":
        d = _json.loads(text)
        action = d.get("action")
        if action not in ("accept", "decline", "cancel"):
            action = "cancel"
        return cls(action, d.get("content") if action == "accept" else None)


@dataclass(frozen=True)
class Event:
    """A redacted lifecycle event (no input, output or message)."""

    timestamp: int
    invocation_id: str
    capability_id: str
    phase: Phase
    error_code: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {
            "timestamp": self.timestamp,
            "invocationId": self.invocation_id,
            "capabilityId": self.capability_id,
            "phase": self.phase.value,
        }
        if self.error_code is not None:
            d["errorCode"] = self.error_code
        return d

    @classmethod
    def from_json(cls, text: str) -> "Event":
        d = _json.loads(text)
        return cls(d.get("timestamp", 0), d.get("invocationId", ""), d.get("capabilityId", ""), _enum(Phase, d.get("phase")), d.get("errorCode"))


def _member_texts(text: str) -> Dict[str, str]:
    """The text of each member value of a JSON object, found without
    parsing the values (so without recursion, whatever their depth)."""
    members: Dict[str, str] = {}
    i = _skip_space(text, 0)
    if text[i : i + 1] != "{":
        raise ValueError("rcip: not a JSON object")
    i = _skip_space(text, i + 1)
    while text[i : i + 1] == '"':
        end = _string_end(text, i)
        name = _json.loads(text[i:end])
        i = _skip_space(text, end)
        if text[i : i + 1] != ":":
            raise ValueError("rcip: not a JSON object")
        start = i + 1
        depth = 0
        i = start
        while i < len(text):
            c = text[i]
            if c == '"':
                i = _string_end(text, i)
                continue
            if c in "[{":
                depth += 1
            elif c in "]}":
                if depth == 0:
                    break
                depth -= 1
            elif c == "," and depth == 0:
                break
            i += 1
        members[name] = text[start:i].strip()
        if text[i : i + 1] == ",":
            i = _skip_space(text, i + 1)
    return members


def _string_end(text: str, i: int) -> int:
    """The index after the JSON string starting at ``text[i]`` (a quote)."""
    i += 1
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
        elif c == '"':
            return i + 1
        else:
            i += 1
    raise ValueError("rcip: an unterminated JSON string")


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\n\r":
        i += 1
    return i


@dataclass(frozen=True)
class ConfirmationNotice:
    """What the host's confirmation callback is told. ``event`` is
    ``"opened"`` (with ``confirmation`` and the captured ``input``, for the
    dialog) or ``"closed"`` (with ``reason``: approved, declined, expired,
    cancelled, invalidated or closed). An ``input`` nested deeper than
    Python's ``json`` parses (the library's depth limit is higher) is given
    as ``RawJson`` text."""

    event: NoticeEvent
    confirmation_id: str
    invocation_id: str
    capability_id: str
    confirmation: Optional[Confirmation] = None
    input: Any = None
    reason: Optional[CloseReason] = None
    json: str = field(default="", repr=False, compare=False)

    def to_dict(self) -> Dict[str, Any]:
        record: Dict[str, Any] = _json.loads(self.json)
        return record

    @classmethod
    def from_json(cls, text: str) -> "ConfirmationNotice":
        try:
            d = _json.loads(text)
        except RecursionError:
            # Only the captured input can be that deep: keep its text.
            members = _member_texts(text)
            raw_input = members.pop("input", None)
            d = {name: _json.loads(value) for name, value in members.items()}
            if raw_input is not None:
                d["input"] = RawJson(raw_input)
        confirmation = Confirmation._from(d.get("confirmation"))
        return cls(
            d.get("event", ""),
            confirmation.id if confirmation else d.get("confirmationId", ""),
            d.get("invocationId", ""),
            d.get("capabilityId", ""),
            confirmation,
            d.get("input"),
            d.get("reason"),
            text,
        )


@dataclass(frozen=True)
class Availability:
    """An availability answer (``RcipAvailability``). An availability check
    may also return a plain ``bool`` or a mapping with these keys."""

    available: bool
    reason_code: Optional[str] = None
    reason: Optional[str] = None


@dataclass(frozen=True)
class Decision:
    """A policy decision. A policy may also return ``"allow"``, ``"deny"``,
    ``"confirm"`` or a mapping ``{"decision", "reason"?}``."""

    decision: DecisionName
    reason: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"decision": self.decision}
        if self.reason is not None:
            d["reason"] = self.reason
        return d


def allow() -> Decision:
    return Decision("allow")


def deny(reason: Optional[str] = None) -> Decision:
    return Decision("deny", reason)


def confirm(reason: Optional[str] = None) -> Decision:
    return Decision("confirm", reason)


@dataclass(frozen=True)
class ValidationResult:
    valid: bool
    issues: Tuple[ValidationIssue, ...]


@dataclass(frozen=True)
class CatalogProblem:
    pointer: str
    rule: str
    message: str
    id: Optional[str] = None


@dataclass(frozen=True)
class CatalogReport:
    """``rcip_catalog_check``: every problem of a catalog, in document order."""

    ok: bool
    problems: Tuple[CatalogProblem, ...]


class Snapshot:
    """An immutable snapshot of one revision. ``client.snapshot()`` returns
    the same object until the revision changes."""

    __slots__ = ("revision", "json", "_data", "_lock")

    def __init__(self, revision: int, text: str) -> None:
        self.revision = revision
        self.json = text
        self._data: Optional[Dict[str, Any]] = None
        self._lock = threading.Lock()

    def to_dict(self) -> Dict[str, Any]:
        """A fresh parsed copy of the snapshot."""
        with self._lock:
            if self._data is None:
                self._data = _json.loads(self.json)
            return copy.deepcopy(self._data)

    @property
    def capabilities(self) -> List[Dict[str, Any]]:
        entries: List[Dict[str, Any]] = self.to_dict()["capabilities"]
        return entries

    @property
    def context(self) -> Dict[str, Any]:
        context: Dict[str, Any] = self.to_dict()["context"]
        return context

    def capability(self, capability_id: str) -> Optional[Dict[str, Any]]:
        for c in self.capabilities:
            if c.get("id") == capability_id:
                return c
        return None

    def __repr__(self) -> str:
        return "Snapshot(revision=%d)" % self.revision


class ManualClock:
    """A clock that moves only when told (epoch milliseconds). Pass it as
    ``Runtime(clock=...)``, usually with ``manual_timers=True``; after
    ``advance`` call ``runtime.run_due_timers()`` to expire confirmations."""

    def __init__(self, start_ms: Optional[int] = None) -> None:
        self._now = int(time.time() * 1000) if start_ms is None else int(start_ms)
        self._lock = threading.Lock()

    def __call__(self) -> int:
        return self._now

    def now(self) -> int:
        return self._now

    def advance(self, ms: int) -> int:
        with self._lock:
            self._now += int(ms)
            return self._now

    def set(self, ms: int) -> None:
        with self._lock:
            self._now = int(ms)


ProposalLike = Union[Proposal, Tuple[str, Any], Mapping[str, Any]]
ScopeIds = Sequence[str]
