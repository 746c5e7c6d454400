"""The declaration layer: rcip.App and @app.capability (schemas from
annotations, typed handlers, needs_approval, refusals)."""

from __future__ import annotations

import asyncio
import datetime
import enum
import importlib.util
import json
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Annotated, Any, Dict, FrozenSet, List, Literal, Mapping, Optional, Sequence, Set, Tuple, TypedDict, Union

import pytest
from conftest import HERE, ROOT

import rcip

try:
    import pydantic
except ImportError:  # pragma: no cover - the optional extra
    pydantic = None


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclass
class Point:
    x: int
    y: int
    label: Optional[str] = None


class Movie(TypedDict):
    title: str
    year: int


class PartialMovie(TypedDict, total=False):
    title: str


@rcip.named("node")
@dataclass
class Node:
    name: str
    children: List["Node"] = field(default_factory=list)


if pydantic is not None:

    class Meeting(pydantic.BaseModel):
        at: datetime.datetime


@dataclass
class Tree:
    children: List["Tree"]


STRING = {"type": "string"}

# (annotation, the schema it must generate, values it accepts, values it refuses)
CASES: List[Tuple[str, Any, Dict[str, Any], List[Any], List[Any]]] = [
    ("bool", bool, {"type": "boolean"}, [True], [1, "x"]),
    ("int", int, {"type": "integer"}, [3, -1], [1.5, "3", True]),
    ("float", float, {"type": "number"}, [1.5, 2], ["x"]),
    ("str", str, STRING, ["", "a"], [1, None]),
    ("None", type(None), {"type": "null"}, [None], [0]),
    ("Any", Any, {}, [None, 1, "x", [1], {"a": 1}], []),
    ("Literal one", Literal["on"], {"type": "string", "const": "on"}, ["on"], ["off"]),
    ("Literal str", Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}, ["a"], ["c", 1]),
    ("Literal int", Literal[1, 2], {"type": "integer", "enum": [1, 2]}, [1], [3, "1"]),
    ("Literal mixed", Literal["a", 1], {"enum": ["a", 1]}, ["a", 1], ["b", 2]),
    ("Enum", Color, {"type": "string", "enum": ["red", "green"]}, ["red"], ["blue", "RED"]),
    ("IntEnum", Level, {"type": "integer", "enum": [1, 2]}, [1, 2], [3]),
    ("list", List[int], {"type": "array", "items": {"type": "integer"}}, [[], [1, 2]], [[1, "a"], {}]),
    ("builtin list", list[str], {"type": "array", "items": STRING}, [["a"]], [[1]]),
    ("Sequence", Sequence[str], {"type": "array", "items": STRING}, [["a"]], ["a"]),
    ("set", Set[int], {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, [[1, 2]], [[1, 1]]),
    ("frozenset", FrozenSet[str], {"type": "array", "items": STRING, "uniqueItems": True}, [["a"]], [["a", "a"]]),
    ("tuple ...", Tuple[int, ...], {"type": "array", "items": {"type": "integer"}}, [[1, 2, 3]], [["a"]]),
    (
        "tuple fixed",
        Tuple[int, str],
        {"type": "array", "prefixItems": [{"type": "integer"}, STRING], "items": False, "minItems": 2, "maxItems": 2},
        [[1, "a"]],
        [[1], [1, "a", 2], ["a", 1]],
    ),
    ("dict", Dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}, [{}, {"a": 1}], [{"a": "x"}, []]),
    ("Mapping Any", Mapping[str, Any], {"type": "object"}, [{"a": [1]}], [[]]),
    ("Optional str", Optional[str], {"type": ["string", "null"]}, ["a", None], [1]),
    ("Optional Literal", Optional[Literal["a", "b"]], {"enum": ["a", "b", None]}, ["a", None], ["c"]),
    ("Optional list", Optional[List[int]], {"type": ["array", "null"], "items": {"type": "integer"}}, [[1], None], ["x", [None]]),
    (
        "Optional TypedDict",
        Optional[Movie],
        {"type": ["object", "null"], "properties": {"title": STRING, "year": {"type": "integer"}}, "required": ["title", "year"], "additionalProperties": False},
        [None, {"title": "a", "year": 1}],
        [{}, []],
    ),
    ("Optional Union", Optional[Union[int, str]], {"anyOf": [{"type": "integer"}, STRING, {"type": "null"}]}, [None, 1, "a"], [1.5]),
    ("Union", Union[int, str], {"anyOf": [{"type": "integer"}, STRING]}, [1, "a"], [1.5, None]),
    (
        "dataclass",
        Point,
        {
            "type": "object",
            "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}, "label": STRING},
            "required": ["x", "y"],
            "additionalProperties": False,
        },
        [{"x": 1, "y": 2}, {"x": 1, "y": 2, "label": "p"}],
        [{"x": 1}, {"x": 1, "y": 2, "z": 3}, {"x": 1, "y": 2, "label": None}],
    ),
    (
        "TypedDict",
        Movie,
        {"type": "object", "properties": {"title": STRING, "year": {"type": "integer"}}, "required": ["title", "year"], "additionalProperties": False},
        [{"title": "Up", "year": 2009}],
        [{"title": "Up"}, {"title": "Up", "year": 2009, "x": 1}],
    ),
    ("TypedDict total=False", PartialMovie, {"type": "object", "properties": {"title": STRING}, "additionalProperties": False}, [{}, {"title": "a"}], [{"t": 1}]),
    ("Annotated description", Annotated[str, "A name."], {"type": "string", "description": "A name."}, ["a"], [1]),
    (
        "Annotated string constraints",
        Annotated[str, rcip.Field(pattern="^V-[0-9]{4}$", min_length=6, max_length=6)],
        {"type": "string", "pattern": "^V-[0-9]{4}$", "minLength": 6, "maxLength": 6},
        ["V-1234"],
        ["V-12345", "X-1234", ""],
    ),
    (
        "Annotated number constraints",
        Annotated[int, rcip.Field(minimum=1, maximum=24)],
        {"type": "integer", "minimum": 1, "maximum": 24},
        [1, 24],
        [0, 25],
    ),
    (
        "Annotated exclusive",
        Annotated[float, rcip.Field(exclusive_minimum=0, exclusive_maximum=1)],
        {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        [0.5],
        [0, 1],
    ),
    (
        "Annotated list length",
        Annotated[List[str], rcip.Field(min_items=1, max_items=2)],
        {"type": "array", "items": STRING, "minItems": 1, "maxItems": 2},
        [["a"]],
        [[], ["a", "b", "c"]],
    ),
    ("Annotated enum", Annotated[str, rcip.Field(enum=["x", "y"])], {"type": "string", "enum": ["x", "y"]}, ["x"], ["z"]),
    (
        "Optional Annotated",
        Optional[Annotated[str, rcip.Field(pattern="^a")]],
        {"type": ["string", "null"], "pattern": "^a"},
        ["ab", None],
        ["b"],
    ),
    (
        "named recursive",
        Node,
        {
            "type": "object",
            "properties": {"name": STRING, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            "required": ["name"],
            "additionalProperties": False,
            "$defs": {
                "node": {
                    "type": "object",
                    "properties": {"name": STRING, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                    "required": ["name"],
                    "additionalProperties": False,
                }
            },
        },
        [{"name": "a", "children": [{"name": "b"}]}],
        [{"name": "a", "children": [{"nom": "b"}]}],
    ),
]

if sys.version_info >= (3, 10):
    CASES.append(("X | None", eval("int | None"), {"type": ["integer", "null"]}, [1, None], ["1"]))
    CASES.append(("X | Y", eval("int | str"), {"anyOf": [{"type": "integer"}, STRING]}, [1, "a"], [None]))


def output_schema_of(annotation: Any) -> Dict[str, Any]:
    app = rcip.App("probe", name="Probe", description="Schema probe.")

    def probe() -> Any:
        """Probe

        Returns a value."""

    probe.__annotations__ = {"return": annotation}
    app.capability(id="probe")(probe)
    return app.capabilities[0].output_schema


@pytest.mark.parametrize("name,annotation,expected,good,bad", CASES, ids=[c[0] for c in CASES])
def test_every_supported_annotation_generates_a_strict_schema(name, annotation, expected, good, bad):
    app = rcip.App("probe", name="Probe", description="Schema probe.")

    def probe(value: Any) -> None:
        """Probe

        Takes one value."""

    probe.__annotations__ = {"value": annotation, "return": type(None)}
    app.capability(id="probe")(probe)
    input_schema = app.capabilities[0].input_schema
    defs = input_schema.pop("$defs", None)
    generated = input_schema["properties"]["value"]
    if defs is not None:
        # A named type at the top of the value: its schema is the def's.
        assert generated == {"$ref": "#/$defs/node"}
        generated = dict(defs["node"], **{"$defs": defs})
    assert generated == expected
    # The library's own strict check compiles it, and it means what it says.
    schema = rcip.Schema(generated)
    try:
        for value in good:
            assert schema.validate(value).valid, (name, value)
        for value in bad:
            assert not schema.validate(value).valid, (name, value)
    finally:
        schema.close()
    # As a return annotation: an object schema as it is, anything else wrapped.
    out = output_schema_of(annotation)
    rcip.Schema(out).close()
    if annotation is type(None):
        assert out == {"type": "object", "additionalProperties": False}  # -> None: the output is {}
    elif generated.get("type") == "object":
        assert out == generated
    else:
        assert out["properties"]["result"] == {k: v for k, v in generated.items() if k != "$defs"}
        assert out["required"] == ["result"]


def _without_defaults(value: Any, path: str, published: List[Tuple[str, Any]]) -> Any:
    if isinstance(value, dict):
        if "default" in value and "type" in value:
            published.append((path, value["default"]))
        return {k: _without_defaults(v, path + "/" + k, published) for k, v in value.items() if not (k == "default" and "type" in value)}
    if isinstance(value, list):
        return [_without_defaults(v, "%s/%d" % (path, i), published) for i, v in enumerate(value)]
    return value


@pytest.mark.skipif(sys.version_info < (3, 10), reason="the desk example needs Python 3.10 (kw_only)")
def test_the_declared_desk_catalog_is_the_c_desk_catalog():
    spec = importlib.util.spec_from_file_location("dispatch_desk_module", os.path.join(HERE, "..", "examples", "dispatch_desk.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules["dispatch_desk_module"] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["dispatch_desk_module"]
    with open(os.path.join(ROOT, "examples-c", "dispatch", "catalog.json"), encoding="utf-8") as f:
        expected = json.load(f)
    generated = module.app.definition()
    # The declaration publishes its parameters' defaults (annotations the
    # C catalog does not carry); apart from them the two are equal.
    published: List[Tuple[str, Any]] = []
    assert _without_defaults(generated, "", published) == expected
    assert published == [
        ("/capabilities/0/inputSchema/properties/unassignedOnly", False),
        ("/capabilities/1/inputSchema/properties/includeArchive", False),
    ]
    assert json.loads(module.app.to_json()) == generated
    assert rcip.Catalog.check(module.app.to_json()).ok
    module.app.catalog().close()


# ----- typed handlers ---------------------------------------------------------------------


@dataclass
class Ticket:
    id: int
    title: str
    color: Color
    points: List[Point]
    assignee: Optional[str] = None


def make_app(with_async: bool = True) -> rcip.App:
    app = rcip.App("tracker", name="Tracker", description="Tickets.", version="2.0.0", names="camelCase")
    tickets = app.scope("tickets", title="Tickets", description="The queue.")

    @app.capability(scopes=[tickets], tags=["t"], when_to_use="To open a ticket.", examples=[("A red one", {"title": "x", "color": "red"})])
    def open_ticket(
        title: Annotated[str, rcip.Field(min_length=1)],
        color: Color,
        points: Optional[List[Point]] = None,
        due_date: Annotated[Optional[str], rcip.Field(pattern="^[0-9]{4}-[0-9]{2}-[0-9]{2}$")] = None,
        movie: Optional[Movie] = None,
    ) -> Ticket:
        """Open a ticket

        Opens a ticket with a title and a color.

        Args:
            title: What the ticket is about.
            color: Its label color.
        """
        assert isinstance(color, Color)
        assert points is None or all(isinstance(p, Point) for p in points)
        assert movie is None or isinstance(movie, dict)
        return Ticket(7, title + (" " + due_date if due_date else "") + (" " + movie["title"] if movie else ""), color, points or [])

    if with_async:

        @app.capability(id="tickets.count", scopes=[tickets])
        async def count(invocation: rcip.Invocation) -> int:
            """Count tickets

            Counts the open tickets."""
            assert isinstance(invocation, rcip.Invocation)
            await asyncio.sleep(0)
            return 3

    @app.capability(id="tickets.purge", effect="write", needs_approval=True)
    def purge() -> None:
        """Purge tickets

        Deletes every closed ticket."""

    return app


def test_the_schema_names_descriptions_and_required_come_from_the_function():
    d = make_app().definition()
    assert d["application"] == {"id": "tracker", "name": "Tracker", "description": "Tickets.", "version": "2.0.0"}
    assert d["scopes"] == [{"id": "tickets", "title": "Tickets", "description": "The queue."}]
    cap = d["capabilities"][0]
    assert cap["id"] == "open_ticket"
    assert (cap["title"], cap["description"]) == ("Open a ticket", "Opens a ticket with a title and a color.")
    schema = cap["inputSchema"]
    assert list(schema["properties"]) == ["title", "color", "points", "dueDate", "movie"]
    assert schema["required"] == ["title", "color"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["title"] == {"type": "string", "minLength": 1, "description": "What the ticket is about."}
    assert schema["properties"]["dueDate"] == {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}
    assert cap["usage"] == {"whenToUse": "To open a ticket.", "examples": [{"description": "A red one", "input": {"title": "x", "color": "red"}}]}
    out = cap["outputSchema"]
    assert out["required"] == ["id", "title", "color", "points"]
    assert "assignee" in out["properties"]
    assert d["capabilities"][1]["inputSchema"] == {"type": "object", "properties": {}, "additionalProperties": False}
    assert d["capabilities"][1]["outputSchema"]["required"] == ["result"]
    assert rcip.Catalog.check(d).ok


def test_handlers_receive_typed_arguments_and_return_dataclasses():
    app = make_app(with_async=False)
    with app.runtime() as runtime:
        runtime.host.set_context(["tickets"])
        outcome = runtime.client.invoke(
            "open_ticket", {"title": "Leak", "color": "green", "points": [{"x": 1, "y": 2}], "dueDate": "2026-01-05", "movie": {"title": "Up", "year": 2009}}
        )
        assert outcome.status == rcip.Status.SUCCEEDED, outcome
        assert outcome.output == {"id": 7, "title": "Leak 2026-01-05 Up", "color": "green", "points": [{"x": 1, "y": 2}]}
        bad = runtime.client.invoke("open_ticket", {"title": "Leak", "color": "blue"})
        assert bad.code == "INPUT_INVALID"


def test_async_handlers_and_wrapped_outputs():
    async def main() -> rcip.Outcome:
        app = make_app()
        runtime = app.runtime()
        async with runtime:
            return await runtime.client.invoke_async("tickets.count", {})

    outcome = asyncio.run(main())
    assert outcome.ok and outcome.output == {"result": 3}


def test_a_dataclass_completed_on_a_deferred_invocation_uses_the_declared_names():
    @dataclass
    class Done:
        visit_id: str
        note: Optional[str] = None

    app = rcip.App("deferring", name="D", description="D.", names="camelCase")

    @app.capability()
    def later(invocation: rcip.Invocation) -> Union[Done, rcip.Invocation]:
        """Later

        Completes later."""
        deferred = invocation.defer()
        deferred.complete(Done("V-1"))
        deferred.close()
        return deferred

    with app.runtime() as runtime:
        outcome = runtime.client.invoke("later", {})
    assert outcome.output == {"visitId": "V-1"}


# ----- needs_approval ---------------------------------------------------------------------


def test_needs_approval_confirms_then_the_approved_rerun_succeeds():
    app = make_app(with_async=False)
    with app.runtime() as runtime:
        first = runtime.client.invoke("tickets.purge", {})
        assert first.status == rcip.Status.CONFIRMATION_REQUIRED
        assert first.confirmation is not None
        approved = runtime.host.approve(first.confirmation.id)
        assert approved.ok and approved.output == {}
        report = runtime.client.preflight([("tickets.purge", {})])
        assert report.outcomes[0].status == "confirmation_required"


def test_a_runtime_policy_deny_wins_over_needs_approval():
    seen: List[str] = []

    def policy(request: rcip.PolicyRequest) -> rcip.Decision:
        seen.append(request.capability_id)
        return rcip.deny("frozen") if request.capability_id == "tickets.purge" else rcip.allow()

    with make_app(with_async=False).runtime(policy=policy) as runtime:
        outcome = runtime.client.invoke("tickets.purge", {})
        assert outcome.code == "POLICY_DENIED"
        assert "tickets.purge" in seen


def test_needs_approval_as_a_function_gives_the_reason_or_lets_the_runtime_policy_decide():
    app = rcip.App("bank", name="Bank", description="Money.")

    def big(request: rcip.PolicyRequest) -> Union[bool, str]:
        return "Pay %d?" % request.input["amount"] if request.input["amount"] > 100 else False

    @app.capability(effect="external", needs_approval=big)
    def pay(amount: int) -> None:
        """Pay

        Pays an amount."""

    with app.runtime(policy=lambda request: "allow") as runtime:
        assert runtime.client.invoke("pay", {"amount": 5}).ok
        big_one = runtime.client.invoke("pay", {"amount": 500})
        assert big_one.status == rcip.Status.CONFIRMATION_REQUIRED
        assert big_one.confirmation is not None and big_one.confirmation.description == "Pay 500?"
    # Without a runtime policy, the default decides the rest: external is denied.
    with app.runtime() as runtime:
        assert runtime.client.invoke("pay", {"amount": 5}).code == "POLICY_DENIED"
        assert runtime.client.invoke("pay", {"amount": 500}).status == rcip.Status.CONFIRMATION_REQUIRED


def test_an_async_runtime_policy_is_composed_as_a_coroutine():
    async def policy(request: rcip.PolicyRequest) -> str:
        await asyncio.sleep(0)
        return "allow"

    async def main() -> rcip.Outcome:
        with make_app().runtime(policy=policy) as runtime:
            return await runtime.client.invoke_async("tickets.purge", {})

    assert asyncio.run(main()).status == rcip.Status.CONFIRMATION_REQUIRED


# ----- refusals -----------------------------------------------------------------------------


def declare(fn: Any, **options: Any) -> None:
    rcip.App("refusals", name="R", description="R.").capability(**options)(fn)


def test_an_id_that_breaks_the_identifier_rule_is_refused_with_the_rule():
    def _private() -> None:
        """T

        D."""

    with pytest.raises(rcip.DeclarationError, match=r"'_private' breaks the RCIP identifier rule: the whole id matches \[a-z\]"):
        declare(_private)
    with pytest.raises(rcip.DeclarationError, match="'a.B'"):
        declare(_private, id="a.B")
    with pytest.raises(rcip.DeclarationError, match="application id"):
        rcip.App("Bad App", name="x", description="x")


def test_types_without_a_strict_schema_are_refused_naming_the_parameter():
    def when(at: datetime.datetime) -> None:
        """T

        D."""

    with pytest.raises(rcip.DeclarationError, match=r"parameter 'at': datetime has no strict JSON Schema: .*format"):
        declare(when)

    def bare(items: list) -> None:  # type: ignore[type-arg]
        """T

        D."""

    with pytest.raises(rcip.DeclarationError, match=r"parameter 'items'.*say what it holds"):
        declare(bare)

    def unannotated(x) -> None:  # type: ignore[no-untyped-def]
        """T

        D."""

    with pytest.raises(rcip.DeclarationError, match="parameter 'x' has no annotation"):
        declare(unannotated)

    def no_return(x: int):  # type: ignore[no-untyped-def]
        """T

        D."""

    with pytest.raises(rcip.DeclarationError, match="annotate the return type"):
        declare(no_return)

    def misplaced(n: Annotated[int, rcip.Field(pattern="^a")]) -> None:
        """T

        D."""

    with pytest.raises(rcip.DeclarationError, match=r"parameter 'n': pattern applies to string values, but the annotated type is integer"):
        declare(misplaced)

    def keys(m: Dict[int, str]) -> None:
        """T

        D."""

    with pytest.raises(rcip.DeclarationError, match="keys are strings"):
        declare(keys)


def test_a_schema_the_library_refuses_is_refused_at_declaration():
    def given(s: str) -> None:
        """T

        D."""

    schema = {"type": "object", "properties": {"s": {"type": "string", "format": "email"}}, "additionalProperties": False}
    with pytest.raises(rcip.DeclarationError) as info:
        declare(given, input_schema=schema)
    message = str(info.value)
    assert "the input schema (property 's') does not pass RCIP's strict check" in message and "format" in message


def test_a_title_and_description_are_required():
    def nodoc() -> None:
        pass

    with pytest.raises(rcip.DeclarationError, match="has no title"):
        declare(nodoc)
    declare(nodoc, title="T", description="D")


def test_a_catalog_the_library_refuses_names_every_problem():
    app = rcip.App("app", name="A", description="A.")

    @app.capability(scopes=["nowhere"])
    def ping() -> None:
        """Ping

        Answers."""

    with pytest.raises(rcip.InvalidCatalogError, match="nowhere"):
        app.catalog()


@pytest.mark.skipif(pydantic is None, reason="pydantic (the optional extra) is not installed")
def test_pydantic_models_in_and_out():
    class Address(pydantic.BaseModel):
        city: str
        zip_code: str = pydantic.Field(pattern="^[0-9]{5}$", alias="zipCode")

    class Person(pydantic.BaseModel):
        name: str = pydantic.Field(min_length=1, description="Full name.")
        address: Optional[Address] = None

    app = rcip.App("people", name="People", description="People.")

    @app.capability()
    def register(person: Person) -> Person:
        """Register

        Registers a person."""
        assert isinstance(person, Person)
        return person

    schema = app.capabilities[0].input_schema
    rcip.Schema(schema).close()
    assert schema["properties"]["person"]["additionalProperties"] is False
    with app.runtime() as runtime:
        outcome = runtime.client.invoke("register", {"person": {"name": "Ada", "address": {"city": "X", "zipCode": "12345"}}})
        assert outcome.ok, outcome
        assert outcome.output == {"name": "Ada", "address": {"city": "X", "zipCode": "12345"}}
        assert runtime.client.invoke("register", {"person": {"name": "Ada", "extra": 1}}).code == "INPUT_INVALID"


@pytest.mark.skipif(pydantic is None, reason="pydantic (the optional extra) is not installed")
def test_a_pydantic_field_with_a_format_is_refused_with_what_to_do():
    def book(meeting: Meeting) -> None:
        """Book

        Books a meeting."""

    with pytest.raises(rcip.DeclarationError) as info:
        declare(book)
    message = str(info.value)
    assert "parameter 'meeting'" in message and '"format" at /properties/at' in message and "annotate that field as str" in message


def test_python_minimum_version_is_stated():
    with open(os.path.join(ROOT, "bindings", "python", "pyproject.toml"), encoding="utf-8") as f:
        assert 'requires-python = ">=3.9"' in f.read()
    assert sys.version_info >= (3, 9)


def test_plain_handlers_may_return_dataclasses_enums_and_models(catalog_dict):
    @dataclass
    class Greeting:
        text: str
        color: Color

    with rcip.Runtime(catalog_dict) as runtime:
        with runtime.host.bind("greeting.say", lambda inv: Greeting("hi " + inv.input["name"], Color.RED)):
            outcome = runtime.client.invoke("greeting.say", {"name": "Ada"})
            assert outcome.ok and outcome.output == {"text": "hi Ada", "color": "red"}
        if pydantic is not None:

            class Reply(pydantic.BaseModel):
                text: str

            with runtime.host.bind("greeting.say", lambda inv: Reply(text="model")):
                assert runtime.client.invoke("greeting.say", {"name": "Ada"}).output == {"text": "model"}
        with runtime.host.bind("greeting.say", lambda inv: object()):
            assert runtime.client.invoke("greeting.say", {"name": "Ada"}).code == "EXECUTION_FAILED"


@dataclass
class Slot:
    start_date: str
    end_date: Optional[str] = None


@dataclass
class Booking:
    room_id: str
    slots: List[Slot]
    node: Optional[Node] = None


def test_nested_dataclasses_decode_and_encode_with_the_application_names():
    app = rcip.App("rooms", name="Rooms", description="Rooms.", names="camelCase")
    seen: List[Booking] = []

    @app.capability()
    def book(booking: Booking, note_text: str = "") -> Booking:
        """Book

        Books a room."""
        seen.append(booking)
        return booking

    schema = app.capabilities[0].input_schema
    assert list(schema["properties"]) == ["booking", "noteText"]
    assert set(schema["$defs"]) == {"node"}
    with app.runtime() as runtime:
        value = {"roomId": "r1", "slots": [{"startDate": "a"}, {"startDate": "b", "endDate": "c"}], "node": {"name": "n", "children": [{"name": "m"}]}}
        outcome = runtime.client.invoke("book", {"booking": value})
        assert outcome.ok, outcome
        # A field with a default is written when it has a value (children=[]).
        assert outcome.output == dict(value, node={"name": "n", "children": [{"name": "m", "children": []}]})
    assert seen == [Booking("r1", [Slot("a"), Slot("b", "c")], Node("n", [Node("m")]))]


def test_a_recursive_type_without_a_name_is_refused_with_what_to_do():
    def grow(tree: Tree) -> None:
        """Grow

        Grows a tree."""

    with pytest.raises(rcip.DeclarationError, match=r"Tree refers to itself: .*@rcip.named\('tree'\)"):
        declare(grow)


# ----- defaults are part of the contract -------------------------------------------


def test_defaults_are_published_and_checked_at_declaration():
    app = rcip.App("defaults", name="Defaults", description="Defaults.", names="camelCase")

    @dataclass
    class Page:
        page_size: int = 10
        cursor: Optional[str] = None

    @app.capability
    def search(
        query: str,
        limit: Annotated[int, rcip.Field(minimum=1, maximum=50)] = 5,
        order: Literal["new", "old"] = "new",
        page: Optional[Page] = None,
        ratio: float = 0.5,
    ) -> None:
        """Search

        Searches."""

    props = app.definition()["capabilities"][0]["inputSchema"]["properties"]
    assert props["limit"] == {"type": "integer", "minimum": 1, "maximum": 50, "default": 5}
    assert props["order"]["default"] == "new" and props["ratio"]["default"] == 0.5
    assert "default" not in props["query"] and "default" not in props["page"], "None means absent, not a default"
    assert props["page"]["properties"]["pageSize"]["default"] == 10
    assert "default" not in props["page"]["properties"]["cursor"]

    # Annotation only: rcip never fills a default in; the handler's own does.
    seen = []
    app2 = rcip.App("filled", name="Filled", description="Filled.")

    @app2.capability
    def count(n: int = 3) -> int:
        """Count

        Counts."""
        seen.append(n)
        return n

    with app2.runtime() as runtime:
        assert runtime.client.invoke("count", {}).output == {"result": 3}

    def declare(source: str) -> None:
        namespace = {"app": rcip.App("bad", name="B", description="B."), "rcip": rcip, "Annotated": Annotated, "Literal": Literal}
        exec("@app.capability\ndef f(%s) -> None:\n    '''T\n\n    D.'''\n" % source, namespace)

    bad = {
        "x: Annotated[int, rcip.Field(minimum=1)] = 0": "breaks its own schema (must be >= 1)",
        "x: float = float('nan')": "not a JSON value",
        "x: str = 3": "breaks its own schema (expected string",
        "x: int = True": "breaks its own schema (expected integer",
        "x: Literal['a', 'b'] = 'c'": "breaks its own schema",
    }
    for source, message in bad.items():
        with pytest.raises(rcip.DeclarationError, match=r"capability f: parameter 'x': the default .*" + re.escape(message)):
            declare(source)

    @dataclass
    class Bad:
        size: Annotated[int, rcip.Field(maximum=9)] = 10

    with pytest.raises(rcip.DeclarationError, match=r"field of Bad 'size': the default 10 breaks its own schema"):

        @rcip.App("badField", name="B", description="B.").capability
        def g(bad: Bad) -> None:
            """T

            D."""


# ----- one naming rule ----------------------------------------------------------


@pytest.mark.skipif(pydantic is None, reason="pydantic (the optional extra) is not installed")
def test_camel_case_holds_for_pydantic_fields_too():
    from pydantic.alias_generators import to_camel

    class Stop(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(alias_generator=to_camel, populate_by_name=True)
        stop_id: str

    class Route(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(alias_generator=to_camel, populate_by_name=True)
        route_name: str
        next_stops: List[Stop] = []

    app = rcip.App("routes", name="Routes", description="Routes.", names="camelCase")

    @app.capability
    def plan(route_plan: Route, max_stops: int = 3) -> Route:
        """Plan

        Plans a route."""
        assert isinstance(route_plan, Route) and isinstance(route_plan.next_stops[0], Stop)
        return route_plan

    schema = app.capabilities[0].input_schema
    assert sorted(schema["properties"]) == ["maxStops", "routePlan"]
    assert sorted(schema["properties"]["routePlan"]["properties"]) == ["nextStops", "routeName"]
    assert list(schema["$defs"]["Stop"]["properties"]) == ["stopId"]
    with app.runtime() as runtime:
        given = {"routePlan": {"routeName": "North", "nextStops": [{"stopId": "S1"}]}}
        assert runtime.client.invoke("plan", given).output == given["routePlan"]

    class Loose(pydantic.BaseModel):
        stop_id: str

    with pytest.raises(rcip.DeclarationError, match=r"pydantic model Loose has field 'stop_id', which this application's names rule writes 'stopId'.*alias_generator"):

        @app.capability
        def loose(stop: Loose) -> None:
            """Loose

            Loose."""

    # names="as_is" (the default) writes every name as it is: nothing to check.
    as_is = rcip.App("asIs", name="As is", description="As is.")

    @as_is.capability
    def keep(stop: Loose) -> None:
        """Keep

        Keeps."""

    assert list(as_is.capabilities[0].input_schema["properties"]["stop"]["properties"]) == ["stop_id"]


@dataclass
class Crew:
    crew_id: str
    lead_name: Optional[str] = None


def test_one_dataclass_has_one_schema_wherever_it_appears():
    app = rcip.App("crews", name="Crews", description="Crews.", names="camelCase")

    @app.capability
    def assign(crew: Crew, backups: List[Crew], spare: Optional[Crew] = None) -> Crew:
        """Assign

        Assigns a crew."""
        return crew

    cap = app.capabilities[0]
    expected = {
        "type": "object",
        "properties": {"crewId": {"type": "string"}, "leadName": {"type": "string"}},
        "required": ["crewId"],
        "additionalProperties": False,
    }
    props = cap.input_schema["properties"]
    assert props["crew"] == props["backups"]["items"] == props["spare"] == cap.output_schema == expected
    assert rcip.to_json(Crew("C1")) == {"crewId": "C1"}

    other = rcip.App("crewsAsIs", name="Crews", description="Crews.")
    with pytest.raises(rcip.DeclarationError, match=r"capability look: the dataclass Crew is declared already with another schema"):

        @other.capability
        def look(crew: Crew) -> None:
            """Look

            Looks."""
