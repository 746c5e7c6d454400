"""Declarations from typed functions: ``rcip.App`` and ``@app.capability``.

    app = rcip.App("greeter", name="Greeter", description="Says hello.")

    @app.capability(effect="read")
    def say(name: Annotated[str, rcip.Field(min_length=1)]) -> Greeting:
        \"\"\"Say hello

        Greets someone by name.
        \"\"\"
        return Greeting(text="hello, " + name)

    with app.runtime() as runtime:
        print(runtime.client.invoke("say", {"name": "Ada"}).output)

The application, its scopes and its capabilities make the catalog
(``app.definition()``, ``app.catalog()``, ``app.to_json()``): the input
schema from the parameters, the output schema from the return annotation
(``_schema.py`` says which annotations work), both checked with the
library's strict schema rules at declaration. ``app.bind(runtime)`` (or
``app.runtime()``) binds the handlers: each receives its arguments decoded
as annotated and may return dataclasses, TypedDicts, enums or pydantic
models. Needs Python 3.9 or later (``Annotated``, ``get_type_hints`` with
extras), as the whole package does.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import sys
import typing
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Literal, Mapping, Optional, Sequence, Set, Tuple, TypeVar, Union, cast

from . import _schema
from ._runtime import (
    AvailabilityCheck,
    Binding,
    Catalog,
    Invocation,
    Policy,
    PolicyAnswer,
    PolicyRequest,
    Runtime,
    RuntimeOptions,
    Schema,
    _is_coroutine_function,
)
from ._schema import Codec, Context, DeclarationError, ObjectCodec
from ._serve import OwnedLoop, ServeOptions
from .errors import RcipError
if typing.TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._mcp import McpSession
elif sys.version_info >= (3, 11):
    from typing import Unpack
else:  # get_type_hints(App.runtime) without typing_extensions (no runtime dependency)
    try:
        from typing_extensions import Unpack
    except ImportError:

        class _Unpack:
            def __getitem__(self, item: Any) -> Any:
                return item

        Unpack = _Unpack()

from .types import ConfirmationNotice, Decision, Effect, Event, RawJson

__all__ = ["App", "Capability", "Example", "Scope"]

F = TypeVar("F", bound=Callable[..., Any])
P = TypeVar("P", bound=Callable[..., Any])

# PIPELINE.md section 1: application, scope and capability ids.
IDENTIFIER = re.compile(r"[a-z][A-Za-z0-9]*([._-][a-z][A-Za-z0-9]*)*")
IDENTIFIER_RULE = "[a-z][A-Za-z0-9]*([._-][a-z][A-Za-z0-9]*)* (PIPELINE.md section 1), e.g. tickets.create or listVisits"

EffectLike = Union[Effect, str]


class ApprovalCheck(typing.Protocol):
    """``needs_approval`` as a function of the policy request: True (or a
    non-empty str, the reason shown with the confirmation) when this call
    must be confirmed by a person."""

    def __call__(self, request: PolicyRequest, /) -> Union[bool, str]: ...


def _check_id(value: str, what: str) -> str:
    if not isinstance(value, str) or not IDENTIFIER.fullmatch(value):
        raise DeclarationError("rcip: %s %r breaks the RCIP identifier rule: the whole id matches %s" % (what, value, IDENTIFIER_RULE))
    return value


@dataclass(frozen=True)
class Example:
    """One ``usage.examples`` entry: a description and an input (checked
    against the input schema when the catalog is built)."""

    description: str
    input: Mapping[str, Any]

    def to_dict(self) -> Dict[str, Any]:
        return {"description": self.description, "input": _schema.to_json(self.input)}


ExampleLike = Union[Example, Tuple[str, Mapping[str, Any]], Mapping[str, Any]]


@dataclass(frozen=True)
class Scope:
    """A declared scope (``app.scope(...)``); pass it (or its id) to
    ``scopes=`` and ``parent=``."""

    id: str
    title: str
    description: str
    parent_id: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"id": self.id, "title": self.title, "description": self.description}
        if self.parent_id is not None:
            d["parentId"] = self.parent_id
        return d


ScopeLike = Union[Scope, str]


def _scope_id(scope: ScopeLike) -> str:
    return scope.id if isinstance(scope, Scope) else scope


def _docstring(fn: Callable[..., Any]) -> Tuple[Optional[str], Optional[str], Dict[str, str]]:
    """(title, description, parameter descriptions) from a docstring: the
    first line is the title, the next paragraphs up to an ``Args:`` (or
    ``Parameters``) section the description; ``name: text`` lines in that
    section describe parameters."""
    doc = inspect.getdoc(fn)
    if not doc:
        return None, None, {}
    lines = doc.splitlines()
    title = lines[0].strip() or None
    body: List[str] = []
    params: Dict[str, str] = {}
    current: Optional[str] = None
    in_args = False
    for line in lines[1:]:
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:", "Parameters", "Params:"):
            in_args = True
            continue
        if in_args:
            if set(stripped) <= {"-"} and stripped:
                continue  # numpydoc's underline
            m = re.match(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", stripped)
            if m and not line.startswith("        "):
                current = m.group(1)
                params[current] = m.group(2).strip()
            elif stripped and current is not None:
                params[current] = (params[current] + " " + stripped).strip()
            elif not stripped:
                current = None
            continue
        body.append(line)
    description = " ".join(" ".join(body).split()) or None
    return title, description, {k: v for k, v in params.items() if v}


class Capability:
    """A declared capability: its catalog entry and its handler."""

    def __init__(
        self,
        app: "App",
        fn: Callable[..., Any],
        *,
        id: Optional[str],
        title: Optional[str],
        description: Optional[str],
        effect: EffectLike,
        scopes: Sequence[ScopeLike],
        tags: Optional[Sequence[str]],
        when_to_use: Optional[str],
        examples: Optional[Sequence[ExampleLike]],
        needs_approval: Union[bool, ApprovalCheck],
        availability: Optional[AvailabilityCheck],
        input_schema: Optional[Mapping[str, Any]],
        output_schema: Optional[Mapping[str, Any]],
        localns: Optional[Mapping[str, Any]] = None,
    ) -> None:
        self.fn = fn
        self.id = _check_id(id if id is not None else getattr(fn, "__name__", ""), "the capability id")
        where = "capability %s" % self.id
        doc_title, doc_description, doc_params = _docstring(fn)
        self.title = title if title is not None else doc_title
        self.description = description if description is not None else doc_description
        if not self.title:
            raise DeclarationError("rcip: %s has no title: give title= or a docstring whose first line is the title" % where)
        if self.description is None:
            raise DeclarationError("rcip: %s has no description: give description= or a docstring paragraph after the title" % where)
        try:
            self.effect = Effect(effect)
        except ValueError:
            raise DeclarationError("rcip: %s: effect %r is none of read, write, external, destructive" % (where, effect)) from None
        self.scope_ids = [_scope_id(s) for s in scopes]
        self.tags = list(tags) if tags is not None else None
        self.when_to_use = when_to_use
        self.examples = [_example(e, where) for e in examples] if examples is not None else None
        if self.examples is not None and when_to_use is None:
            raise DeclarationError("rcip: %s: examples need when_to_use (they are both in usage)" % where)
        if not (isinstance(needs_approval, bool) or callable(needs_approval)):
            raise DeclarationError("rcip: %s: needs_approval is a bool or a function of the policy request" % where)
        self.needs_approval = needs_approval
        if availability is not None and not callable(availability):
            raise DeclarationError("rcip: %s: availability must be callable" % where)
        self.availability = availability
        self.is_async = _is_coroutine_function(fn)

        signature = inspect.signature(fn)
        hints = _schema._hints(fn, where, localns)
        ctx = Context(app._names, localns)
        self._invocation_param: Optional[str] = None
        items: List[Tuple[str, Any, bool]] = []
        defaults: Dict[str, Any] = {}
        for name, param in signature.parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise DeclarationError("rcip: %s: *%s has no schema; declare each input as a parameter" % (where, name))
            if param.kind is param.POSITIONAL_ONLY:
                raise DeclarationError("rcip: %s: parameter %r is positional-only; inputs are passed by name" % (where, name))
            annotation = hints.get(name, inspect.Parameter.empty)
            if annotation is Invocation:
                self._invocation_param = name
                continue
            if annotation is inspect.Parameter.empty:
                raise DeclarationError("rcip: %s: parameter %r has no annotation; annotate it (its schema comes from the annotation)" % (where, name))
            items.append((name, annotation, param.default is not inspect.Parameter.empty))
            if param.default is not inspect.Parameter.empty:
                defaults[name] = param.default
        if input_schema is not None:
            self._input: Optional[ObjectCodec] = None
            self.input_schema: Dict[str, Any] = dict(input_schema)
        else:
            self._input = _schema.object_codec(items, dict, ctx, where + ": parameter", descriptions=doc_params, defaults=defaults)
            self.input_schema = _with_defs(self._input.schema, ctx)
        _strict(self.input_schema, where, "input schema")

        out_ctx = Context(app._names, localns)
        self._wrap_output = False
        if output_schema is not None:
            self._output: Optional[Codec] = None
            self.output_schema: Dict[str, Any] = dict(output_schema)
        else:
            if "return" not in hints:
                raise DeclarationError("rcip: %s: annotate the return type (the output schema comes from it; -> None for no output)" % where)
            returns = _without_invocation(hints["return"])
            if returns is None or returns is type(None):
                self._output = _NoOutput()
            else:
                codec = _schema.codec_for(returns, out_ctx, where + ": the return type")
                if _object_schema(codec.schema, out_ctx):
                    self._output = codec
                else:
                    # MCP structured content is an object: wrap other values.
                    self._wrap_output = True
                    self._output = _schema.object_codec([("result", returns, False)], dict, out_ctx, where + ": the return type", rename=False)
            self.output_schema = _with_defs(self._output.schema, out_ctx)
        _strict(self.output_schema, where, "output schema")
        _register_dataclasses(where, self._input, self._output)

    # ----- the catalog entry ---------------------------------------------------------

    def definition(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {
            "id": self.id,
            "title": self.title,
            "description": self.description,
            "scopeIds": list(self.scope_ids),
            "effect": self.effect.value,
        }
        if self.tags is not None:
            d["tags"] = list(self.tags)
        d["inputSchema"] = self.input_schema
        d["outputSchema"] = self.output_schema
        if self.when_to_use is not None:
            usage: Dict[str, Any] = {"whenToUse": self.when_to_use}
            if self.examples is not None:
                usage["examples"] = [e.to_dict() for e in self.examples]
            d["usage"] = usage
        return d

    # ----- the handler -------------------------------------------------------------------

    def _arguments(self, inv: Invocation) -> Dict[str, Any]:
        value = inv.input
        kwargs = self._input.decode_kwargs(value) if self._input is not None else dict(value)
        if self._invocation_param is not None:
            kwargs[self._invocation_param] = inv
        return kwargs

    def _decoded_arguments(self, value: Any) -> Dict[str, Any]:
        """The input as the handler receives it, by parameter name (the
        policy's ``request.arguments``); the members as they are when the
        input schema was given by hand or the input does not decode."""
        if self._input is None or not isinstance(value, Mapping):
            return dict(value) if isinstance(value, Mapping) else {}
        try:
            return self._input.decode_kwargs(value)
        except Exception:  # noqa: BLE001 - validated already; never fail the policy for this
            return dict(value)

    def _encode(self, inv: Invocation, result: Any) -> Any:
        if isinstance(result, RawJson) or inv._deferred:
            return result
        if self._output is None:
            return _schema.to_json(result)
        if self._wrap_output:
            return self._output.encode({"result": result})
        return self._output.encode(result)

    def handler(self) -> Callable[[Invocation], Any]:
        """The ``host.bind`` handler: decodes the input, calls the function,
        encodes what it returns."""
        fn = self.fn
        if self.is_async:

            async def run_async(inv: Invocation) -> Any:
                result = await fn(**self._arguments(inv))
                return self._encode(inv, result)

            return run_async

        def run(inv: Invocation) -> Any:
            return self._encode(inv, fn(**self._arguments(inv)))

        return run

    def approval(self, request: PolicyRequest) -> Optional[str]:
        """None when no approval is needed, else the reason ("" for none)."""
        needs = self.needs_approval
        if isinstance(needs, bool):
            return "" if needs else None
        answer = needs(request)
        if isinstance(answer, str):
            return answer if answer else None
        return "" if answer else None

    def __repr__(self) -> str:
        return "Capability(%r, effect=%r)" % (self.id, self.effect.value)


def _without_invocation(returns: Any) -> Any:
    """``-> Union[X, rcip.Invocation]``: a handler that may ``return
    invocation.defer()``; the output schema is X's."""
    if typing.get_origin(returns) in _schema._UNION_TYPES:
        members = [a for a in typing.get_args(returns) if a is not Invocation]
        if len(members) != len(typing.get_args(returns)):
            return members[0] if len(members) == 1 else Union[tuple(members)]
    return returns


class _NoOutput(Codec):
    """``-> None``: the output is ``{}``."""

    def __init__(self) -> None:
        self.schema = {"type": "object", "additionalProperties": False}

    def encode(self, value: Any) -> Any:
        return {} if value is None else _schema.to_json(value)


def _object_schema(schema: Mapping[str, Any], ctx: Context) -> bool:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        schema = ctx.defs.get(ref[len("#/$defs/") :], {})
    return schema.get("type") == "object"


def _with_defs(schema: Dict[str, Any], ctx: Context) -> Dict[str, Any]:
    if not ctx.defs:
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and set(schema) == {"$ref"} and ref.startswith("#/$defs/"):
        # A named type at the top: write it there, keep the other defs.
        name = ref[len("#/$defs/") :]
        top = dict(ctx.defs[name])
        rest = {k: v for k, v in ctx.defs.items() if k != name}
        if _refers(top, name) or any(_refers(v, name) for v in rest.values()):
            rest[name] = ctx.defs[name]
        if rest:
            top["$defs"] = rest
        return top
    out = dict(schema)
    out["$defs"] = dict(ctx.defs)
    return out


def _refers(schema: Any, name: str) -> bool:
    text = json.dumps(schema)
    return ('"#/$defs/%s"' % name) in text


def _strict(schema: Mapping[str, Any], where: str, what: str) -> None:
    """The library's own strict check, with the failure named."""
    try:
        Schema(schema).close()
    except RcipError as exc:
        detail = exc.message if hasattr(exc, "message") else str(exc)
        pointer = re.search(r'at "(/[^"]*)"', detail or "")
        name = None
        if pointer:
            m = re.match(r"^/properties/([^/]+)", pointer.group(1))
            if m:
                name = m.group(1)
        raise DeclarationError(
            "rcip: %s: the %s%s does not pass RCIP's strict check: %s" % (where, what, " (property %r)" % name if name else "", detail)
        ) from None


def _register_dataclasses(where: str, *parts: Any) -> None:
    """Remember how declared dataclasses are written (JSON names, absent
    fields), so ``Invocation.complete(visit)`` writes them the same way."""
    seen: Set[int] = set()

    def walk(codec: Any) -> None:
        if codec is None or id(codec) in seen:
            return
        seen.add(id(codec))
        if isinstance(codec, ObjectCodec):
            build = codec.build
            cls = getattr(build, "__rcip_class__", None)
            if cls is not None:
                _schema.register(cls, codec, where)
            for p in codec.properties:
                walk(p.codec)
        for attr in ("inner", "target", "item", "values"):
            walk(getattr(codec, attr, None))
        for _, option in getattr(codec, "options", []) or []:
            walk(option)
        for item in getattr(codec, "items", []) or []:
            walk(item)

    for part in parts:
        if isinstance(part, Context):
            continue
        walk(part)


def _example(e: ExampleLike, where: str) -> Example:
    if isinstance(e, Example):
        return e
    if isinstance(e, tuple) and len(e) == 2:
        return Example(e[0], e[1])
    if isinstance(e, Mapping) and "description" in e:
        return Example(e["description"], e.get("input", {}))
    raise DeclarationError("rcip: %s: an example is rcip.Example(description, input), a (description, input) pair or a mapping" % where)


Naming = typing.Literal["as_is", "camelCase"]


class _Registered:
    """``App.policy()``'s default: the policy ``@app.runtime_policy`` registered."""

    def __repr__(self) -> str:
        return "REGISTERED"


REGISTERED = _Registered()


class App:
    """An application declared in Python: its metadata, scopes and
    capabilities (the catalog) and the handlers bound to them.

    ``names="camelCase"`` writes parameter and dataclass field names in
    camelCase in JSON (``technician_id`` is ``technicianId``) and refuses
    a pydantic model field it would rename that has no alias (pydantic
    validates the JSON as it is); ``"as_is"`` (the default) keeps every
    name. ``rcip.Field(alias=...)`` names one property explicitly.
    TypedDict keys are always used as written. A dataclass has one schema
    in every application that declares it.

    Declare from one thread (usually at import); afterwards
    ``definition``, ``catalog``, ``bind`` and ``runtime`` may be called
    from any thread, any number of times (each ``runtime()`` is a new
    runtime over a new compiled catalog). Every declaration method raises
    ``DeclarationError`` for what RCIP refuses; ``catalog()`` raises
    ``InvalidCatalogError`` for what only the whole catalog shows (a scope
    id no scope declares, an example its input schema rejects).
    """

    def __init__(
        self,
        id: str,
        *,
        name: str,
        description: str,
        version: Optional[str] = None,
        names: Naming = "as_is",
    ) -> None:
        self.id = _check_id(id, "the application id")
        self.name = name
        self.description = description
        self.version = version
        if names not in ("as_is", "camelCase"):
            raise DeclarationError("rcip: names is 'as_is' or 'camelCase', not %r" % (names,))
        self._names: Callable[[str], str] = _schema.camel_case if names == "camelCase" else (lambda n: n)
        self._scopes: List[Scope] = []
        self._capabilities: List[Capability] = []
        self._runtime_policy: Optional[Policy] = None

    def runtime_policy(self, policy: P) -> P:
        """Sets the runtime-wide policy ``runtime()`` and ``serve_stdio()``
        compose with ``needs_approval`` when not given one (usable as a
        decorator; returns ``policy``)."""
        if not callable(policy):
            raise TypeError("rcip: a policy must be callable")
        self._runtime_policy = policy
        return policy

    # ----- declarations ----------------------------------------------------------------

    def scope(self, id: str, *, title: str, description: str, parent: Optional[ScopeLike] = None) -> Scope:
        """Declares a scope; returns it (pass it to ``scopes=``)."""
        scope = Scope(_check_id(id, "the scope id"), title, description, None if parent is None else _scope_id(parent))
        if any(s.id == scope.id for s in self._scopes):
            raise DeclarationError("rcip: scope %r is declared twice" % id)
        self._scopes.append(scope)
        return scope

    @typing.overload
    def capability(self, fn: F) -> F: ...

    @typing.overload
    def capability(
        self,
        *,
        id: Optional[str] = None,
        title: Optional[str] = None,
        description: Optional[str] = None,
        effect: EffectLike = Effect.READ,
        scopes: Sequence[ScopeLike] = (),
        tags: Optional[Sequence[str]] = None,
        when_to_use: Optional[str] = None,
        examples: Optional[Sequence[ExampleLike]] = None,
        needs_approval: Union[bool, ApprovalCheck] = False,
        availability: Optional[AvailabilityCheck] = None,
        input_schema: Optional[Mapping[str, Any]] = None,
        output_schema: Optional[Mapping[str, Any]] = None,
    ) -> Callable[[F], F]: ...

    def capability(
        self,
        fn: Optional[F] = None,
        *,
        id: Optional[str] = None,
        title: Optional[str] = None,
        description: Optional[str] = None,
        effect: EffectLike = Effect.READ,
        scopes: Sequence[ScopeLike] = (),
        tags: Optional[Sequence[str]] = None,
        when_to_use: Optional[str] = None,
        examples: Optional[Sequence[ExampleLike]] = None,
        needs_approval: Union[bool, ApprovalCheck] = False,
        availability: Optional[AvailabilityCheck] = None,
        input_schema: Optional[Mapping[str, Any]] = None,
        output_schema: Optional[Mapping[str, Any]] = None,
    ) -> Union[F, Callable[[F], F]]:
        """Declares the decorated function as a capability and returns the
        function unchanged (``app.capabilities`` holds the declaration).

        ``id`` defaults to the function's name, ``title`` to the
        docstring's first line, ``description`` to the paragraphs after it
        (up to an ``Args:`` section, whose ``name: text`` lines describe
        the parameters). ``effect`` is read (default), write, external or
        destructive. ``needs_approval`` (True, or a function of the
        ``PolicyRequest`` returning True or the reason text) makes the
        policy ask for confirmation unless the request is the approved
        re-run (see ``App.policy``). ``availability()`` is the binding's
        availability check. ``input_schema`` / ``output_schema`` replace
        the generated schemas (checked the same way); with
        ``input_schema`` the function gets each top-level input member as
        a keyword argument, as JSON, and with ``output_schema`` its return
        value is written with ``rcip.to_json``. A parameter annotated ``rcip.Invocation`` receives
        the invocation (its token, ``defer()``) and is not an input.
        Raises ``DeclarationError`` at once for anything RCIP refuses."""

        def declare(f: F, localns: Optional[Mapping[str, Any]] = None) -> F:
            if localns is None:
                caller = sys._getframe(1)
                localns = caller.f_locals if caller.f_code.co_name != "<module>" else None
            cap = Capability(
                self,
                f,
                id=id,
                title=title,
                description=description,
                effect=effect,
                scopes=scopes,
                tags=tags,
                when_to_use=when_to_use,
                examples=examples,
                needs_approval=needs_approval,
                availability=availability,
                input_schema=input_schema,
                output_schema=output_schema,
                localns=localns,
            )
            if any(c.id == cap.id for c in self._capabilities):
                raise DeclarationError("rcip: capability %r is declared twice" % cap.id)
            self._capabilities.append(cap)
            return f

        if fn is not None:
            caller = sys._getframe(1)
            return declare(fn, caller.f_locals if caller.f_code.co_name != "<module>" else {})
        return declare

    @property
    def capabilities(self) -> List[Capability]:
        return list(self._capabilities)

    @property
    def scopes(self) -> List[Scope]:
        return list(self._scopes)

    def get(self, capability_id: str) -> Capability:
        for c in self._capabilities:
            if c.id == capability_id:
                return c
        raise KeyError(capability_id)

    # ----- the catalog -------------------------------------------------------------------

    def definition(self) -> Dict[str, Any]:
        """The catalog (``RcipApplicationDefinition``) as a dict."""
        application: Dict[str, Any] = {"id": self.id, "name": self.name, "description": self.description}
        if self.version is not None:
            application["version"] = self.version
        return {
            "protocolVersion": "1.0",
            "application": application,
            "scopes": [s.to_dict() for s in self._scopes],
            "capabilities": [c.definition() for c in self._capabilities],
        }

    def to_json(self, indent: Optional[int] = 2) -> str:
        """The catalog as JSON text (for ``rcip check`` and other languages)."""
        return json.dumps(self.definition(), indent=indent, ensure_ascii=False)

    def catalog(self) -> Catalog:
        """The checked, compiled catalog. ``InvalidCatalogError`` (with
        every problem in its message) when the library refuses it, e.g. a
        scope id no scope declares or an example its input schema rejects."""
        definition = self.definition()
        try:
            return Catalog(definition)
        except RcipError as exc:
            report = Catalog.check(definition)
            if report.problems:
                problems = "; ".join("%s: %s (%s)" % (p.pointer, p.message, p.rule) for p in report.problems)
                exc.args = ("%s: %s" % (exc.args[0] if exc.args else "rcip: invalid catalog", problems),) + tuple(exc.args[1:])
            raise

    # ----- policy ------------------------------------------------------------------------

    def policy(self, runtime_policy: Union[Policy, None, "_Registered"] = REGISTERED) -> Policy:
        """The host policy of this application: ``runtime_policy`` (by
        default the one ``@app.runtime_policy`` registered; ``None`` for
        none, i.e. the library's default: read → allow, confirmed → allow,
        destructive → confirm, write and external → deny) composed with
        each capability's ``needs_approval``:

        - a capability without ``needs_approval``: the runtime policy decides;
        - with it: a deny from ``runtime_policy`` wins; otherwise the
          request is confirmed (``confirm``, with the reason the check
          returned) unless it is the approved re-run (``confirmed``),
          which is allowed. Without a runtime policy, ``needs_approval``
          replaces the default's effect rule for that capability (a write
          that needs approval is confirmed, not denied).

        Every policy and ``needs_approval`` check it calls gets the request
        with ``request.arguments`` decoded as the handler receives them
        (dataclasses, TypedDicts, enums, pydantic models, plain values, by
        parameter name). A coroutine ``runtime_policy`` makes the composed
        policy a coroutine function too."""
        if isinstance(runtime_policy, _Registered):
            runtime_policy = self._runtime_policy
        by_id = {c.id: c for c in self._capabilities}

        def decode(request: PolicyRequest) -> None:
            cap = by_id.get(request.capability_id)
            if cap is not None:
                request._arguments = cap._decoded_arguments(request.input)

        def gate(request: PolicyRequest, first: PolicyAnswer) -> PolicyAnswer:
            cap = by_id.get(request.capability_id)
            reason = cap.approval(request) if cap is not None else None
            if reason is None:
                return first if first is not None else _default_decision(request)
            if first is not None and _decision_name(first) == "deny":
                return first
            if request.confirmed:
                return Decision("allow")
            if not reason and first is not None and _decision_name(first) == "confirm":
                return first  # the runtime policy's own confirmation text
            return Decision("confirm", reason or None)

        if runtime_policy is not None and _is_coroutine_function(runtime_policy):
            async_policy = runtime_policy

            async def composed_async(request: PolicyRequest) -> PolicyAnswer:
                decode(request)
                answer = async_policy(request)
                return gate(request, await answer if inspect.isawaitable(answer) else answer)

            return composed_async

        sync_policy = runtime_policy

        def composed(request: PolicyRequest) -> PolicyAnswer:
            decode(request)
            answer = sync_policy(request) if sync_policy is not None else None
            if inspect.isawaitable(answer):  # a coroutine from a callable object
                raise TypeError("rcip: the runtime policy returned an awaitable but is not a coroutine function")
            return gate(request, answer)

        return composed

    # ----- binding and running -----------------------------------------------------------

    def bind(self, runtime: Runtime) -> List[Binding]:
        """Binds every declared capability's handler (and availability
        check) on ``runtime``; returns the bindings (in effect until closed
        or the runtime closes, kept or not)."""
        bindings = []
        try:
            for cap in self._capabilities:
                bindings.append(runtime.host.bind(cap.id, cap.handler(), cap.availability))
        except BaseException:
            for b in bindings:
                b.close()
            raise
        return bindings

    def runtime(self, *, catalog: Optional[Catalog] = None, **options: "Unpack[RuntimeOptions]") -> Runtime:
        """A runtime over this catalog with every handler bound and the
        composed policy (``App.policy(policy)``, ``policy`` defaulting to
        the one ``runtime_policy`` set); every other keyword is
        ``Runtime``'s (``rcip.RuntimeOptions`` lists them: ``on_event``,
        ``on_progress``, ``confirmation_ttl_ms``, ``loop`` ...).
        ``catalog``: this app's catalog compiled already (``app.catalog()``),
        to build many runtimes without compiling it each time. Create it
        inside the running loop when a handler is a coroutine function (or
        pass ``loop``). Bindings given in ``bindings`` are bound besides
        the declared handlers."""
        unknown = set(options) - set(RuntimeOptions.__annotations__)
        if unknown:
            raise TypeError("rcip: App.runtime() got unexpected keyword arguments %s" % ", ".join(sorted(unknown)))
        rest: Dict[str, Any] = dict(options)
        policy: Optional[Policy] = rest.pop("policy", None)
        if policy is None:
            policy = self._runtime_policy
        needs = policy is not None or any(c.needs_approval is not False for c in self._capabilities)
        given = catalog
        catalog = given if given is not None else self.catalog()
        try:
            runtime = Runtime(catalog, policy=self.policy(policy) if needs else policy, **rest)
        finally:
            if given is None:
                catalog.close()
        try:
            self.bind(runtime)
        except BaseException:
            runtime.close()
            raise
        return runtime

    def _needs_loop(self, policy: Optional[Policy]) -> bool:
        """True when a handler or the policy is a coroutine function."""
        chosen = policy if policy is not None else self._runtime_policy
        return any(c.is_async for c in self._capabilities) or (chosen is not None and _is_coroutine_function(chosen))

    def _session_json(self, serve: ServeOptions) -> Dict[str, Any]:
        return serve.session_json({"serverName": self.id, "serverVersion": self.version, "instructions": self.description})

    def serve_stdio(self, options: Union[ServeOptions, Mapping[str, Any], None] = None, *, policy: Optional[Policy] = None) -> None:
        """Serves this application to an MCP client over stdio until the
        input ends or Ctrl-C (``KeyboardInterrupt`` is raised again after
        the session closed); what ``python -m rcip serve MODULE:APP``
        runs. ``options``: ``rcip.ServeOptions`` (confirmation mode, tool
        names, confirmation TTL, workers, the full JSON options), or the
        JSON options mapping itself; the server name and version default
        to the application's id and version, the instructions to its
        description. When a handler or the policy is a coroutine function
        this runs an asyncio loop (``asyncio.run(app.serve_stdio_async(...))``)
        for them."""
        serve = ServeOptions.coerce(options)
        if self._needs_loop(policy):
            asyncio.run(self.serve_stdio_async(serve, policy=policy))
            return
        with self.runtime(policy=policy, confirmation_ttl_ms=serve.confirmation_ttl_ms) as runtime, self._session(runtime, serve) as session:
            session.serve_stdio()

    async def serve_stdio_async(self, options: Union[ServeOptions, Mapping[str, Any], None] = None, *, policy: Optional[Policy] = None) -> None:
        """``serve_stdio`` on the running loop (coroutine handlers and
        policies run on it); cancelling the awaiting task closes the
        session."""
        serve = ServeOptions.coerce(options)
        with self.runtime(policy=policy, confirmation_ttl_ms=serve.confirmation_ttl_ms) as runtime, self._session(runtime, serve) as session:
            await session.serve_stdio_async()

    def serve_http(
        self,
        address: str = "127.0.0.1:0",
        options: Union[ServeOptions, Mapping[str, Any], None] = None,
        *,
        policy: Optional[Policy] = None,
        on_listening: Optional[Callable[[str], object]] = None,
    ) -> None:
        """Serves this application to remote MCP clients over Streamable
        HTTP at ``address`` until Ctrl-C (``KeyboardInterrupt`` is raised
        again after the server shut down): one runtime per MCP session
        (``runtime(policy=policy)``); ``options`` as for ``serve_stdio``
        (the JSON options may hold the server options of docs/MCP.md too).
        ``on_listening(url)`` is told the URL once it serves; what ``python
        -m rcip serve MODULE:APP --http ADDR`` runs. When a handler or the
        policy is a coroutine function, the server owns an asyncio loop on
        a thread of its own and every session's coroutines run there
        (``serve_http_async`` runs them on the caller's loop instead)."""
        from ._http import McpHttpServer

        serve = ServeOptions.coerce(options)
        catalog = self.catalog()
        owned = OwnedLoop() if self._needs_loop(policy) else None
        loop = owned.loop if owned is not None else None
        try:
            server = McpHttpServer(
                catalog,
                lambda _setup: self.runtime(policy=policy, catalog=catalog, loop=loop, confirmation_ttl_ms=serve.confirmation_ttl_ms),
                address,
                options=self._session_json(serve),
            )
            with server:
                server.start()
                if on_listening is not None:
                    on_listening(server.url)
                server.serve()
        finally:
            catalog.close()
            if owned is not None:
                owned.close()

    async def serve_http_async(
        self,
        address: str = "127.0.0.1:0",
        options: Union[ServeOptions, Mapping[str, Any], None] = None,
        *,
        policy: Optional[Policy] = None,
        on_listening: Optional[Callable[[str], object]] = None,
    ) -> None:
        """``serve_http`` on the running loop: every session's coroutine
        handlers and policies run on it, and the loop stays free (the
        server runs on library threads). Serves until the awaiting task is
        cancelled (``asyncio.run`` does that on Ctrl-C): then the server
        shuts down and ``CancelledError`` propagates."""
        from ._http import McpHttpServer

        serve = ServeOptions.coerce(options)
        loop = asyncio.get_running_loop()
        catalog = self.catalog()
        try:
            server = McpHttpServer(
                catalog,
                lambda _setup: self.runtime(policy=policy, catalog=catalog, loop=loop, confirmation_ttl_ms=serve.confirmation_ttl_ms),
                address,
                options=self._session_json(serve),
            )
            with server:
                server.start()
                if on_listening is not None:
                    on_listening(server.url)
                try:
                    while True:
                        await asyncio.sleep(3600)
                finally:
                    # Ending sessions closes runtimes whose coroutines need
                    # this loop: shut down off it.
                    await asyncio.shield(loop.run_in_executor(None, server.close))
        finally:
            catalog.close()

    def _session(self, runtime: Runtime, serve: ServeOptions) -> "McpSession":
        from ._mcp import McpSession

        return McpSession(runtime, options=self._session_json(serve))

    def __iter__(self) -> Iterator[Capability]:
        return iter(self._capabilities)

    def __repr__(self) -> str:
        return "App(%r, %d capabilities)" % (self.id, len(self._capabilities))


def _decision_name(answer: Any) -> Optional[str]:
    if isinstance(answer, str):
        return answer
    if isinstance(answer, Decision):
        return answer.decision
    if isinstance(answer, Mapping):
        value = answer.get("decision")
        return value if isinstance(value, str) else None
    return None


def _default_decision(request: PolicyRequest) -> Decision:
    """The library's default policy (rcip_runtime_builder_set_policy)."""
    effect = request.effect
    if effect == "read" or request.confirmed:
        return Decision("allow")
    if effect == "destructive":
        return Decision("confirm")
    return Decision("deny")

