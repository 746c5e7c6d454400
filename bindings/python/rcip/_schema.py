"""Strict JSON Schemas from Python annotations, and the conversions between
JSON payloads and the annotated Python values (the declaration layer's
engine; ``rcip.App`` in ``_app.py`` is its front).

Every annotation becomes a *codec*: the schema it stands for (strict JSON
Schema 2020-12 as RCIP compiles capability schemas: no ``format``, objects
closed with ``additionalProperties: false``, ``required`` listing only
declared properties) and the two conversions, ``decode`` (a validated JSON
value to the annotated Python value) and ``encode`` (a Python value to a
JSON value). Supported (Python 3.9 or later): ``bool``, ``int``,
``float``, ``str``, ``None``, ``Any`` (any JSON value), ``Literal``,
``Enum`` (values of one JSON type), ``list`` / ``Sequence`` / ``tuple`` /
``set`` / ``frozenset``, ``dict[str, X]`` / ``Mapping``, ``Optional`` and
``Union``, dataclasses, ``TypedDict``, pydantic v2 models (when pydantic is
installed), each with ``Annotated`` metadata (``rcip.Field`` or a plain
string as the description). Anything else raises ``DeclarationError``
naming where it was found and what to write instead.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import json
import re
import sys
import types
import typing
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple, Union

__all__ = ["DeclarationError", "Field", "named", "Codec", "codec_for"]

_NoneType = type(None)
_MISSING: Any = dataclasses.MISSING


class DeclarationError(TypeError):
    """A declaration RCIP cannot accept: an annotation without a strict
    schema, an identifier that breaks the RCIP identifier rule, a schema
    the library's strict check refuses. The message names the capability,
    the parameter or field, and what to do."""


@dataclasses.dataclass(frozen=True)
class Field:
    """``Annotated`` metadata for a parameter, a dataclass field or a list
    item: ``Annotated[str, rcip.Field(pattern=r"^V-[0-9]{4}$")]``.

    Each constraint becomes the JSON Schema keyword of the same meaning
    (``pattern``, ``minLength``, ``maxLength``, ``minimum``, ``maximum``,
    ``exclusiveMinimum``, ``exclusiveMaximum``, ``minItems``,
    ``maxItems``, ``enum``); ``description`` and ``title`` are
    annotations; ``alias`` is the property name in JSON (instead of the
    parameter or field name, after the application's naming rule). A
    keyword that does not apply to the annotated type is refused at
    declaration (RCIP's strict types)."""

    description: Optional[str] = None
    title: Optional[str] = None
    alias: Optional[str] = None
    pattern: Optional[str] = None
    min_length: Optional[int] = None
    max_length: Optional[int] = None
    minimum: Optional[Union[int, float]] = None
    maximum: Optional[Union[int, float]] = None
    exclusive_minimum: Optional[Union[int, float]] = None
    exclusive_maximum: Optional[Union[int, float]] = None
    min_items: Optional[int] = None
    max_items: Optional[int] = None
    enum: Optional[Sequence[Union[str, int, float, bool]]] = None


_KEYWORDS: Tuple[Tuple[str, str, Tuple[str, ...]], ...] = (
    # (Field attribute, JSON Schema keyword, JSON types it applies to)
    ("pattern", "pattern", ("string",)),
    ("min_length", "minLength", ("string",)),
    ("max_length", "maxLength", ("string",)),
    ("minimum", "minimum", ("integer", "number")),
    ("maximum", "maximum", ("integer", "number")),
    ("exclusive_minimum", "exclusiveMinimum", ("integer", "number")),
    ("exclusive_maximum", "exclusiveMaximum", ("integer", "number")),
    ("min_items", "minItems", ("array",)),
    ("max_items", "maxItems", ("array",)),
)

# annotated-types objects (what pydantic's own constraints are) by attribute.
_ANNOTATED_TYPES = {"gt": "exclusive_minimum", "ge": "minimum", "lt": "exclusive_maximum", "le": "maximum", "min_length": "min_length", "max_length": "max_length", "pattern": "pattern"}

_NAMED_ATTR = "__rcip_schema_name__"


def named(name: str) -> Callable[[type], type]:
    """Class decorator: the schema of this dataclass, TypedDict or model is
    kept once under ``$defs/NAME`` of every capability schema that uses it
    and referred to with ``{"$ref": "#/$defs/NAME"}`` (without it the
    schema is written in place)."""

    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", name):
        raise DeclarationError("rcip: a schema name is letters, digits, '_', '.' and '-', not %r" % (name,))

    def mark(cls: type) -> type:
        setattr(cls, _NAMED_ATTR, name)
        return cls

    return mark


def camel_case(name: str) -> str:
    """``technician_id`` -> ``technicianId`` (leading underscores kept out)."""
    head, *rest = name.strip("_").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest if part)


class Context:
    """One schema being generated: its ``$defs`` and the naming rule."""

    def __init__(self, names: Callable[[str], str], localns: Optional[Mapping[str, Any]] = None) -> None:
        self.names = names
        # The names visible where the capability was declared, so that
        # string annotations of local classes resolve.
        self.localns = localns
        self.defs: Dict[str, Any] = {}
        self._def_owner: Dict[str, Any] = {}
        self._building: Dict[Any, "Codec"] = {}
        self._inline: Set[Any] = set()  # unnamed types being written in place

    def add_def(self, name: str, owner: Any, schema: Any, where: str) -> None:
        known = self._def_owner.get(name)
        if known is not None and known is not owner:
            raise DeclarationError("rcip: %s: two types use the schema name %r" % (where, name))
        self._def_owner[name] = owner
        self.defs[name] = schema


class Codec:
    """A schema and the conversions for one annotation."""

    schema: Dict[str, Any]
    nullable: bool = False

    def decode(self, value: Any) -> Any:
        return value

    def encode(self, value: Any) -> Any:
        return to_json(value)


class _Plain(Codec):
    def __init__(self, schema: Dict[str, Any], kind: Optional[type] = None) -> None:
        self.schema = schema
        self.kind = kind

    def decode(self, value: Any) -> Any:
        if self.kind is int and isinstance(value, float) and value.is_integer():
            return int(value)
        if self.kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        return value


class _EnumCodec(Codec):
    def __init__(self, schema: Dict[str, Any], cls: Any) -> None:
        self.schema = schema
        self.cls = cls

    def decode(self, value: Any) -> Any:
        return self.cls(value)

    def encode(self, value: Any) -> Any:
        return value.value if isinstance(value, enum.Enum) else value


class _ListCodec(Codec):
    def __init__(self, schema: Dict[str, Any], item: Codec, build: Callable[[Any], Any]) -> None:
        self.schema = schema
        self.item = item
        self.build = build

    def decode(self, value: Any) -> Any:
        return self.build(self.item.decode(v) for v in value)

    def encode(self, value: Any) -> Any:
        return [self.item.encode(v) for v in value]


class _TupleCodec(Codec):
    def __init__(self, schema: Dict[str, Any], items: List[Codec]) -> None:
        self.schema = schema
        self.items = items

    def decode(self, value: Any) -> Any:
        return tuple(c.decode(v) for c, v in zip(self.items, value))

    def encode(self, value: Any) -> Any:
        return [c.encode(v) for c, v in zip(self.items, value)]


class _DictCodec(Codec):
    def __init__(self, schema: Dict[str, Any], values: Codec) -> None:
        self.schema = schema
        self.values = values

    def decode(self, value: Any) -> Any:
        return {k: self.values.decode(v) for k, v in value.items()}

    def encode(self, value: Any) -> Any:
        return {str(k): self.values.encode(v) for k, v in value.items()}


class _Nullable(Codec):
    nullable = True

    def __init__(self, schema: Dict[str, Any], inner: Codec) -> None:
        self.schema = schema
        self.inner = inner

    def decode(self, value: Any) -> Any:
        return None if value is None else self.inner.decode(value)

    def encode(self, value: Any) -> Any:
        return None if value is None else self.inner.encode(value)


class _UnionCodec(Codec):
    def __init__(self, schema: Dict[str, Any], options: List[Tuple[Any, Codec]]) -> None:
        self.schema = schema
        self.options = options

    def decode(self, value: Any) -> Any:
        last: Optional[BaseException] = None
        for _, option in self.options:
            if not _json_fits(option.schema, value):
                continue
            try:
                return option.decode(value)
            except Exception as exc:  # noqa: BLE001 - the next option may fit
                last = exc
        if last is not None:
            raise last
        return value

    def encode(self, value: Any) -> Any:
        for tp, option in self.options:
            origin = typing.get_origin(tp) or tp
            if isinstance(origin, type) and isinstance(value, origin):
                return option.encode(value)
        return to_json(value)


def _json_fits(schema: Mapping[str, Any], value: Any) -> bool:
    """A quick type test to pick a union member (the input was validated)."""
    kind = schema.get("type")
    if kind is None:
        return True
    kinds = kind if isinstance(kind, list) else [kind]
    for k in kinds:
        if k == "null" and value is None:
            return True
        if k == "boolean" and isinstance(value, bool):
            return True
        if k == "integer" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if k == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if k == "string" and isinstance(value, str):
            return True
        if k == "array" and isinstance(value, list):
            return True
        if k == "object" and isinstance(value, dict):
            return True
    return False


class _Property:
    __slots__ = ("attr", "json_name", "codec", "required", "omit_none")

    def __init__(self, attr: str, json_name: str, codec: Codec, required: bool, omit_none: bool) -> None:
        self.attr = attr
        self.json_name = json_name
        self.codec = codec
        self.required = required
        self.omit_none = omit_none


class ObjectCodec(Codec):
    """An object with declared properties: a dataclass, a TypedDict or a
    function's parameters. ``build(kwargs)`` makes the Python value."""

    def __init__(self, properties: List[_Property], build: Callable[[Dict[str, Any]], Any], description: Optional[str] = None) -> None:
        self.properties = properties
        self.build = build
        schema: Dict[str, Any] = {"type": "object", "properties": {p.json_name: p.codec.schema for p in properties}}
        required = [p.json_name for p in properties if p.required]
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        if description:
            schema["description"] = description
        self.schema = schema

    def decode_kwargs(self, value: Mapping[str, Any]) -> Dict[str, Any]:
        kwargs: Dict[str, Any] = {}
        for p in self.properties:
            if p.json_name in value:
                kwargs[p.attr] = p.codec.decode(value[p.json_name])
        return kwargs

    def decode(self, value: Any) -> Any:
        return self.build(self.decode_kwargs(value))

    def encode(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            source: Callable[[str], Any] = lambda attr: value.get(attr, _MISSING)  # noqa: E731
            # A plain mapping may use the JSON names already.
            if any(p.json_name in value and p.json_name != p.attr for p in self.properties):
                by_json = {p.attr: p.json_name for p in self.properties}
                source = lambda attr: value.get(by_json[attr], value.get(attr, _MISSING))  # noqa: E731
        else:
            source = lambda attr: getattr(value, attr, _MISSING)  # noqa: E731
        out: Dict[str, Any] = {}
        for p in self.properties:
            item = source(p.attr)
            if item is _MISSING or (item is None and p.omit_none):
                continue
            out[p.json_name] = p.codec.encode(item)
        return out


class _RefCodec(Codec):
    """A named type: ``{"$ref": "#/$defs/NAME"}`` over its codec."""

    def __init__(self, name: str, target: Codec) -> None:
        self.schema = {"$ref": "#/$defs/" + name}
        self.target = target

    def decode(self, value: Any) -> Any:
        return self.target.decode(value)

    def encode(self, value: Any) -> Any:
        return self.target.encode(value)


class _PydanticCodec(Codec):
    def __init__(self, schema: Dict[str, Any], cls: Any) -> None:
        self.schema = schema
        self.cls = cls

    def decode(self, value: Any) -> Any:
        return self.cls.model_validate(value)

    def encode(self, value: Any) -> Any:
        if isinstance(value, self.cls):
            return value.model_dump(mode="json", by_alias=True, exclude_none=True)
        return to_json(value)


# ----- annotations -> codecs ------------------------------------------------------------


def _strip_annotated(tp: Any) -> Tuple[Any, List[Any]]:
    extras: List[Any] = []
    while typing.get_origin(tp) is typing.Annotated:
        extras.extend(tp.__metadata__)
        tp = tp.__origin__
    return tp, extras


def field_metadata(extras: Sequence[Any], where: str) -> Tuple[Dict[str, Any], Optional[str]]:
    """The ``Field`` attributes set by the ``Annotated`` metadata, and an alias."""
    values: Dict[str, Any] = {}
    for meta in extras:
        if isinstance(meta, Field):
            for f in dataclasses.fields(Field):
                v = getattr(meta, f.name)
                if v is not None:
                    values[f.name] = v
        elif isinstance(meta, str):
            values["description"] = meta
        elif hasattr(meta, "description") and type(meta).__name__ == "FieldInfo":
            if getattr(meta, "description", None):
                values["description"] = meta.description
            if getattr(meta, "alias", None):
                values["alias"] = meta.alias
            for inner in getattr(meta, "metadata", []) or []:
                values.update(_annotated_types(inner, where))
        else:
            values.update(_annotated_types(meta, where))
    return values, values.pop("alias", None)


def _annotated_types(meta: Any, where: str) -> Dict[str, Any]:
    found = {}
    for attr, name in _ANNOTATED_TYPES.items():
        v = getattr(meta, attr, None)
        if v is not None and not callable(v):
            found[name] = v
    if not found:
        raise DeclarationError(
            "rcip: %s: Annotated metadata %r means nothing to rcip: use rcip.Field(...) or a str (the description)" % (where, meta)
        )
    return found


def _apply_field(schema: Dict[str, Any], values: Mapping[str, Any], where: str) -> Dict[str, Any]:
    if not values:
        return schema
    schema = dict(schema)
    kinds = schema.get("type")
    kinds_list = kinds if isinstance(kinds, list) else [kinds] if kinds else []
    for attr, keyword, applies in _KEYWORDS:
        if attr in values:
            if not any(k in applies for k in kinds_list):
                raise DeclarationError(
                    "rcip: %s: %s applies to %s values, but the annotated type is %s"
                    % (where, attr, " or ".join(applies), _describe(schema))
                )
            value = values[attr]
            if attr == "pattern":
                try:
                    re.compile(value)
                except re.error as exc:
                    raise DeclarationError("rcip: %s: the pattern %r is not a regular expression: %s" % (where, value, exc)) from None
            schema[keyword] = value
    if "enum" in values:
        schema["enum"] = list(values["enum"])
    if "title" in values:
        schema["title"] = values["title"]
    if "description" in values:
        schema["description"] = values["description"]
    return schema


def _describe(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if kind is None:
        return "without a single JSON type"
    return "/".join(kind) if isinstance(kind, list) else str(kind)


_NO_STRICT_SCHEMA = {
    "datetime": 'a date-time string; RCIP\'s strict mode refuses "format", so annotate str (e.g. Annotated[str, rcip.Field(pattern=...)]) and parse it in the handler',
    "date": "a date string: annotate Annotated[str, rcip.Field(pattern=r\"^[0-9]{4}-[0-9]{2}-[0-9]{2}$\")] and parse it in the handler",
    "time": "a time string: annotate str with a pattern and parse it in the handler",
    "UUID": "a UUID string: annotate str with a pattern and convert it in the handler",
    "Decimal": "annotate float, or str with a pattern",
    "bytes": "JSON has no bytes: annotate str (for example base64 text with a pattern)",
    "bytearray": "JSON has no bytes: annotate str",
    "complex": "JSON has no complex numbers",
}


def codec_for(tp: Any, ctx: Context, where: str) -> Codec:
    """The codec of annotation ``tp``; ``where`` names it in errors."""
    tp, extras = _strip_annotated(tp)
    values, _alias = field_metadata(extras, where)
    codec = _codec(tp, ctx, where)
    if values:
        if isinstance(codec, _Nullable) and any(a in values for a, _, _ in _KEYWORDS):
            # The constraint is on the value; null stays allowed.
            inner = _apply_field(codec.inner.schema, {k: v for k, v in values.items() if k not in ("description", "title")}, where)
            codec.inner = _Retyped(inner, codec.inner)
            codec.schema = _nullable_schema(inner)
            values = {k: v for k, v in values.items() if k in ("description", "title")}
        if values:
            codec = _Retyped(_apply_field(codec.schema, values, where), codec)
    return codec


class _Retyped(Codec):
    """Another schema (constraints added) over the same conversions."""

    def __init__(self, schema: Dict[str, Any], inner: Codec) -> None:
        self.schema = schema
        self.inner = inner
        self.nullable = inner.nullable

    def decode(self, value: Any) -> Any:
        return self.inner.decode(value)

    def encode(self, value: Any) -> Any:
        return self.inner.encode(value)


def _nullable_schema(schema: Dict[str, Any]) -> Dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str) and "enum" not in schema and "const" not in schema:
        out = dict(schema)
        out["type"] = [kind, "null"]
        return out
    if "enum" in schema and set(schema) <= {"type", "enum", "description", "title"}:
        out = dict(schema)
        out.pop("type", None)
        out["enum"] = list(schema["enum"]) + [None]
        return out
    if set(schema) == {"anyOf"}:
        return {"anyOf": list(schema["anyOf"]) + [{"type": "null"}]}
    return {"anyOf": [schema, {"type": "null"}]}


def _literal_schema(values: Sequence[Any], where: str) -> Dict[str, Any]:
    kinds = set()
    for v in values:
        if isinstance(v, enum.Enum):
            v = v.value
        if isinstance(v, bool):
            kinds.add("boolean")
        elif isinstance(v, int):
            kinds.add("integer")
        elif isinstance(v, float):
            kinds.add("number")
        elif isinstance(v, str):
            kinds.add("string")
        else:
            raise DeclarationError("rcip: %s: the value %r has no JSON type (use str, int, float or bool values)" % (where, v))
    plain = [v.value if isinstance(v, enum.Enum) else v for v in values]
    schema: Dict[str, Any] = {}
    if len(kinds) == 1:
        schema["type"] = kinds.pop()
    elif kinds == {"integer", "number"}:
        schema["type"] = "number"
    if len(plain) == 1:
        schema["const"] = plain[0]
    else:
        schema["enum"] = plain
    return schema


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


def _is_pydantic(tp: Any) -> bool:
    if not isinstance(tp, type):
        return False
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and issubclass(tp, getattr(pydantic, "BaseModel", ()))


def _own_doc(cls: type) -> Optional[str]:
    doc = cls.__dict__.get("__doc__")
    if not doc or (dataclasses.is_dataclass(cls) and doc.startswith(cls.__name__ + "(")):
        return None  # the signature dataclasses writes
    return " ".join(doc.strip().split())


def _hints(obj: Any, where: str, localns: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    try:
        return typing.get_type_hints(obj, localns=dict(localns) if localns else None, include_extras=True)
    except Exception as exc:  # noqa: BLE001 - a name that does not resolve
        raise DeclarationError("rcip: %s: cannot resolve the annotations: %s" % (where, exc)) from None


def _codec(tp: Any, ctx: Context, where: str) -> Codec:
    if tp is Any or tp is object:
        return _Plain({})
    if tp is None or tp is _NoneType:
        return _Plain({"type": "null"})
    if tp is bool:
        return _Plain({"type": "boolean"}, bool)
    if tp is int:
        return _Plain({"type": "integer"}, int)
    if tp is float:
        return _Plain({"type": "number"}, float)
    if tp is str:
        return _Plain({"type": "string"}, str)
    if isinstance(tp, typing.TypeVar) or isinstance(tp, str) or isinstance(tp, typing.ForwardRef):
        raise DeclarationError("rcip: %s: the annotation %r does not name a type" % (where, tp))

    origin = typing.get_origin(tp)
    args = typing.get_args(tp)

    if origin is typing.Literal:
        return _EnumCodec(_literal_schema(args, where), lambda v: v)

    if origin in _UNION_TYPES:
        members = [a for a in args if a is not _NoneType]
        has_none = len(members) != len(args)
        if len(members) == 1:
            inner = codec_for(members[0], ctx, where)
        else:
            options = [(m, codec_for(m, ctx, where)) for m in members]
            inner = _UnionCodec({"anyOf": [c.schema for _, c in options]}, options)
        if not has_none:
            return inner
        return _Nullable(_nullable_schema(inner.schema), inner)

    if origin in (list, set, frozenset) or origin in _SEQUENCE_ORIGINS:
        if not args:
            raise DeclarationError("rcip: %s: say what the list holds, e.g. list[str]" % where)
        item = codec_for(args[0], ctx, where + " (items)")
        schema: Dict[str, Any] = {"type": "array", "items": item.schema}
        build: Callable[[Any], Any] = list
        if origin in (set, frozenset) or origin in _SET_ORIGINS:
            schema["uniqueItems"] = True
            build = frozenset if origin is frozenset else set
        return _ListCodec(schema, item, build)

    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = codec_for(args[0], ctx, where + " (items)")
            return _ListCodec({"type": "array", "items": item.schema}, item, tuple)
        if not args or args == ((),):
            return _TupleCodec({"type": "array", "maxItems": 0}, [])
        items = [codec_for(a, ctx, "%s (item %d)" % (where, i)) for i, a in enumerate(args)]
        return _TupleCodec(
            {"type": "array", "prefixItems": [c.schema for c in items], "items": False, "minItems": len(items), "maxItems": len(items)}, items
        )

    if origin in (dict,) or origin in _MAPPING_ORIGINS:
        if len(args) != 2:
            raise DeclarationError("rcip: %s: say what the dict maps, e.g. dict[str, int]" % where)
        key = _strip_annotated(args[0])[0]
        if key is not str:
            raise DeclarationError("rcip: %s: JSON object keys are strings: annotate dict[str, ...], not %r" % (where, args[0]))
        values = codec_for(args[1], ctx, where + " (values)")
        schema = {"type": "object", "additionalProperties": values.schema} if values.schema != {} else {"type": "object"}
        return _DictCodec(schema, values)

    if tp in (list, tuple, set, frozenset, dict) or tp in (List, Dict, Tuple, Sequence, Mapping):
        raise DeclarationError("rcip: %s: a bare %r has no strict schema: say what it holds, e.g. list[str] or dict[str, int]" % (where, tp))

    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        members = list(tp)
        if not members:
            raise DeclarationError("rcip: %s: the enum %s has no members" % (where, tp.__name__))
        return _named(tp, ctx, lambda: _EnumCodec(_literal_schema([m.value for m in members], where), tp))

    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _named(tp, ctx, lambda: _dataclass_codec(tp, ctx, where))

    if _is_typeddict(tp):
        return _named(tp, ctx, lambda: _typeddict_codec(tp, ctx, where))

    if _is_pydantic(tp):
        return _pydantic_codec(tp, ctx, where)

    name = getattr(tp, "__name__", repr(tp))
    hint = _NO_STRICT_SCHEMA.get(name)
    if hint is not None:
        raise DeclarationError("rcip: %s: %s has no strict JSON Schema: %s" % (where, name, hint))
    raise DeclarationError(
        "rcip: %s: %s has no strict JSON Schema; use bool, int, float, str, Literal, an Enum, list[...], dict[str, ...], "
        "Optional[...], a dataclass, a TypedDict or a pydantic model" % (where, name)
    )


# typing.get_origin of Sequence[int], Set[int], Mapping[str, int] and the like.
_SET_ORIGINS: Tuple[Any, ...] = (collections.abc.Set, collections.abc.MutableSet)
_SEQUENCE_ORIGINS: Tuple[Any, ...] = (collections.abc.Sequence, collections.abc.MutableSequence, collections.abc.Iterable, collections.abc.Collection) + _SET_ORIGINS
_MAPPING_ORIGINS: Tuple[Any, ...] = (collections.abc.Mapping, collections.abc.MutableMapping)
# X | Y (Python 3.10+) is a types.UnionType, not typing.Union.
_UNION_TYPES: Tuple[Any, ...] = (Union,) + ((types.UnionType,) if hasattr(types, "UnionType") else ())


def _named(tp: type, ctx: Context, make: Callable[[], Codec]) -> Codec:
    name = tp.__dict__.get(_NAMED_ATTR)
    if name is None:
        if tp in ctx._inline:
            raise DeclarationError(
                "rcip: %s refers to itself: a recursive type needs a name in $defs; decorate it with @rcip.named(%r)"
                % (tp.__name__, tp.__name__[:1].lower() + tp.__name__[1:])
            )
        ctx._inline.add(tp)
        try:
            return make()
        finally:
            ctx._inline.discard(tp)
    building = ctx._building.get(tp)
    if building is not None:
        return building
    ref = _RefCodec(name, Codec())
    ctx._building[tp] = ref
    try:
        target = make()
    finally:
        del ctx._building[tp]
    ref.target = target
    ctx.add_def(name, tp, target.schema, getattr(tp, "__name__", name))
    return ref


def object_codec(
    items: Sequence[Tuple[str, Any, bool]],
    build: Callable[[Dict[str, Any]], Any],
    ctx: Context,
    where: str,
    rename: bool = True,
    description: Optional[str] = None,
    descriptions: Optional[Mapping[str, str]] = None,
    defaults: Optional[Mapping[str, Any]] = None,
) -> ObjectCodec:
    """``items``: (attribute name, annotation, has a default);
    ``defaults``: the default values (attribute name → value) to check
    against their property's schema and publish as its ``default``."""
    props: List[_Property] = []
    seen: Dict[str, str] = {}
    for attr, annotation, has_default in items:
        here = "%s %r" % (where, attr)
        _, extras = _strip_annotated(annotation)
        _, alias = field_metadata(extras, here)
        json_name = alias or (ctx.names(attr) if rename else attr)
        if json_name in seen:
            raise DeclarationError("rcip: %s: %r and %r are both %r in JSON" % (where, seen[json_name], attr, json_name))
        seen[json_name] = attr
        codec = codec_for(annotation, ctx, here)
        schema = codec.schema
        doc = (descriptions or {}).get(attr)
        if doc and "description" not in schema:
            codec = _Retyped(dict(schema, description=doc), codec)
        omit_none = False
        if has_default:
            absent = _absent_form(codec)
            if absent is not None:
                # ``x: Optional[T] = None``: may be absent (absent means
                # None), so the schema is T's and None is left out on output.
                codec, omit_none = absent, True
        if defaults is not None and attr in defaults and not (omit_none and defaults[attr] is None):
            codec = _with_default(codec, defaults[attr], ctx, here)
        props.append(_Property(attr, json_name, codec, not has_default, omit_none))
    return ObjectCodec(props, build, description)


def _with_default(codec: Codec, default: Any, ctx: Context, where: str) -> Codec:
    """``codec`` with ``default`` published as its schema's ``default``
    (an annotation: the runtime never fills it in), after checking that
    it is a JSON value its own schema accepts: a default the schema
    refuses (of another type, outside its constraints, NaN) is a
    declaration error, since no client could send it."""
    from ._runtime import Schema  # the library's own validator

    try:
        value = codec.encode(default)
        text = json.dumps(value, allow_nan=False)
    except ValueError:
        raise DeclarationError("rcip: %s: the default %r is not a JSON value (NaN and infinities have no JSON form)" % (where, default)) from None
    except Exception as exc:  # noqa: BLE001 - the default does not encode as annotated
        raise DeclarationError("rcip: %s: the default %r does not fit the annotation: %s" % (where, default, exc)) from None
    value = json.loads(text)
    schema = dict(codec.schema)
    check = dict(schema, **({"$defs": dict(ctx.defs)} if ctx.defs else {}))
    validator = Schema(check)
    try:
        result = validator.validate(value)
    finally:
        validator.close()
    if not result.valid:
        issue = result.issues[0] if result.issues else None
        detail = "%s%s" % (issue.message, " at %s" % issue.instance_path if issue is not None and issue.instance_path else "") if issue is not None else "refused"
        raise DeclarationError("rcip: %s: the default %r breaks its own schema (%s): give a default the schema accepts" % (where, default, detail))
    schema["default"] = value
    return _Retyped(schema, codec)


def _absent_form(codec: Codec) -> Optional[Codec]:
    """For a nullable codec: the same conversions under the non-null
    schema (descriptions kept); None when ``codec`` is not nullable."""
    notes: Dict[str, Any] = {}
    node = codec
    while isinstance(node, _Retyped):
        for k in ("description", "title"):
            if k in node.schema and k not in notes:
                notes[k] = node.schema[k]
        node = node.inner
    if not isinstance(node, _Nullable):
        return None
    schema = dict(node.inner.schema)
    schema.update({k: v for k, v in notes.items() if k not in schema})
    return _Retyped(schema, node)


def _dataclass_codec(cls: Any, ctx: Context, where: str) -> Codec:
    hints = _hints(cls, cls.__name__, ctx.localns)
    items = []
    defaults: Dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        has_default = f.default is not _MISSING or f.default_factory is not _MISSING
        items.append((f.name, hints.get(f.name, Any), has_default))
        if f.default is not _MISSING:
            defaults[f.name] = f.default

    def build(kwargs: Dict[str, Any]) -> Any:
        return cls(**kwargs)

    build.__rcip_class__ = cls  # type: ignore[attr-defined]
    return object_codec(items, build, ctx, "%s: field of %s" % (where, cls.__name__), description=_own_doc(cls), defaults=defaults)


def _typeddict_codec(cls: Any, ctx: Context, where: str) -> Codec:
    hints = _hints(cls, cls.__name__, ctx.localns)
    required = getattr(cls, "__required_keys__", frozenset(hints))
    items = []
    for key, annotation in hints.items():
        bare, extras = _strip_annotated(annotation)
        origin = typing.get_origin(bare)
        if origin is not None and getattr(origin, "_name", "") in ("Required", "NotRequired"):
            bare = typing.get_args(bare)[0]
            annotation = typing.Annotated[(bare, *extras)] if extras else bare
        items.append((key, annotation, key not in required))
    codec = object_codec(items, dict, ctx, "%s: key of %s" % (where, cls.__name__), rename=False, description=_own_doc(cls))
    for p in codec.properties:
        p.omit_none = False  # a TypedDict key present with None means null
    return codec


def _pydantic_models(tp: Any, found: List[Any]) -> List[Any]:
    """``tp`` and every pydantic model its fields reach, once each."""
    if _is_pydantic(tp):
        if tp in found:
            return found
        found.append(tp)
        for f in tp.model_fields.values():
            _pydantic_models(f.annotation, found)
        return found
    for arg in typing.get_args(tp):
        _pydantic_models(arg, found)
    return found


def _check_pydantic_names(cls: Any, ctx: Context, where: str) -> None:
    """The application's naming rule holds for pydantic fields too. rcip
    hands the JSON to ``model_validate`` unchanged, so it cannot rename a
    model's fields behind pydantic's back: a field the rule would rename
    and that has no alias (its own, or pydantic's ``alias_generator``) is
    refused, with the fix."""
    for model in _pydantic_models(cls, []):
        for name, f in model.model_fields.items():
            if f.alias is None and ctx.names(name) != name:
                raise DeclarationError(
                    "rcip: %s: the pydantic model %s has field %r, which this application's names rule writes %r: "
                    "give the model pydantic's alias_generator (model_config = pydantic.ConfigDict(alias_generator="
                    "pydantic.alias_generators.to_camel, populate_by_name=True)) or the field an alias"
                    % (where, model.__name__, name, ctx.names(name))
                )


def _pydantic_codec(cls: Any, ctx: Context, where: str) -> Codec:
    _check_pydantic_names(cls, ctx, where)
    ref_name = cls.__dict__.get(_NAMED_ATTR)
    try:
        schema = cls.model_json_schema(by_alias=True, mode="validation", ref_template="#/$defs/{model}")
    except Exception as exc:  # noqa: BLE001 - pydantic could not generate one
        raise DeclarationError("rcip: %s: pydantic gives no JSON Schema for %s: %s" % (where, cls.__name__, exc)) from None
    defs = schema.pop("$defs", {})
    _close_objects(schema, cls.model_config.get("extra") != "allow")
    for d in defs.values():
        _close_objects(d, True)
    problem = _first_format(schema, "") or next((p for p in (_first_format(d, "/$defs/" + n) for n, d in defs.items()) if p), None)
    if problem is not None:
        raise DeclarationError(
            "rcip: %s: the pydantic model %s has \"format\" at %s (%r), which RCIP's strict mode refuses: annotate that field as str "
            "(with a pattern: Annotated[str, rcip.Field(pattern=...)] or pydantic's Field(pattern=...)) and convert it in the handler"
            % (where, cls.__name__, problem[0] or "/", problem[1])
        )
    for name, d in defs.items():
        ctx.add_def(name, ("pydantic", name), d, where)
    if ref_name is not None:
        ctx.add_def(ref_name, cls, schema, where)
        return _PydanticCodec({"$ref": "#/$defs/" + ref_name}, cls)
    return _PydanticCodec(schema, cls)


def _close_objects(schema: Any, close: bool) -> None:
    """Objects pydantic leaves open get ``additionalProperties: false``."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" and "properties" in schema and "additionalProperties" not in schema and close:
            schema["additionalProperties"] = False
        for k, v in schema.items():
            if k in ("properties", "$defs"):
                for sub in v.values():
                    _close_objects(sub, True)
            elif isinstance(v, (dict, list)) and k not in ("enum", "const", "default", "examples"):
                _close_objects(v, True)
    elif isinstance(schema, list):
        for v in schema:
            _close_objects(v, True)


def _first_format(schema: Any, pointer: str) -> Optional[Tuple[str, Any]]:
    if isinstance(schema, dict):
        if "format" in schema and not isinstance(schema.get("format"), dict):
            return pointer, schema["format"]
        for k, v in schema.items():
            if k in ("enum", "const", "default", "examples"):
                continue
            if k in ("properties", "$defs") and isinstance(v, dict):
                for name, sub in v.items():
                    found = _first_format(sub, "%s/%s/%s" % (pointer, k, name))
                    if found:
                        return found
            else:
                found = _first_format(v, "%s/%s" % (pointer, k))
                if found:
                    return found
    elif isinstance(schema, list):
        for i, v in enumerate(schema):
            found = _first_format(v, "%s/%d" % (pointer, i))
            if found:
                return found
    return None


# ----- Python values -> JSON values --------------------------------------------------------

_registered: Dict[type, Codec] = {}


def register(cls: type, codec: Codec, where: str = "") -> None:
    """The codec a declared dataclass is written with (its JSON names).
    One dataclass has one schema wherever it appears: declaring it again
    with another (an application with another ``names`` rule) raises
    ``DeclarationError``, since ``to_json`` could not know which to write."""
    known = _registered.get(cls)
    if known is not None and known is not codec and json.dumps(known.schema, sort_keys=True) != json.dumps(codec.schema, sort_keys=True):
        raise DeclarationError(
            "rcip: %s: the dataclass %s is declared already with another schema (%s, not %s): one dataclass has one schema; "
            "give both applications the same names= rule, or use rcip.Field(alias=...) on its fields"
            % (where or "a declaration", cls.__name__, json.dumps(known.schema), json.dumps(codec.schema))
        )
    _registered[cls] = codec


JsonValue = Union[None, bool, int, float, str, List["JsonValue"], Dict[str, "JsonValue"]]
"""A JSON value as Python holds it."""


def to_json(value: object) -> JsonValue:
    """A JSON value for ``value``: dataclasses (with the JSON names of the
    application that declared them), enums, pydantic models, tuples and
    sets become JSON; JSON values stay as they are."""
    if value is None or isinstance(value, (bool, int, float, str)):
        if isinstance(value, enum.Enum):
            return to_json(value.value)
        return value
    if isinstance(value, enum.Enum):
        return to_json(value.value)
    codec = _registered.get(type(value))
    if codec is not None:
        encoded: JsonValue = codec.encode(value)
        return encoded
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "model_dump") and _is_pydantic(type(value)):
        dumped: JsonValue = getattr(value, "model_dump")(mode="json", by_alias=True, exclude_none=True)
        return dumped
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_json(v) for v in value]
    return value  # type: ignore[return-value]  # not JSON: the caller's serialiser says so
