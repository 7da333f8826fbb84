"""The fast path of OTLP/JSON decoding: a parsed JSON object → the request message, exactly as
protobuf's `json_format.ParseDict(..., ignore_unknown_fields=True)` maps it after codec turns
the OTLP/JSON hex ids into base64, or `Defer` when this path does not cover the input.

Each message's JSON object becomes the keyword arguments of its constructor (nested messages
as nested dicts), which upb builds in C; `json_format` instead sets one field at a time in
Python (about three times the CPU: README, "Measured"). The converters are data (`_Message`,
`_Repeated`, `_Enum`: a table per message type), applied in Python (`pure_run`, the reference,
and with `TOOLTRAIL_PURE_PYTHON=1`) or interpreted by the compiled extension (`_wire.convert`).
The path covers what OTLP producers send and defers everything else to `json_format` (codec's
slow path), so it never refuses an input itself and its answers cannot differ:

- keys: the field's JSON name or proto name; an unknown ASCII key is skipped, as
  `json_format` does with `ignore_unknown_fields`; any other unknown key (an extension
  `[...]`, a lone surrogate), a field given under both names, or two members of one oneof
  defer;
- null clears a field (skipped); a null element of a list defers;
- strings must be JSON strings (a lone surrogate makes the constructor raise: defer);
- integers: JSON integers, or strings of ASCII digits with an optional `-` (anything else
  `int()` or `json_format` might read, e.g. `"1e3"`, `"+1"`, floats, defers); out of range:
  the constructor raises, defer;
- doubles: finite JSON numbers, or decimal strings (`"NaN"`, `"Infinity"` and the like
  defer); bools: JSON booleans;
- enums: a value name of the enum, or a JSON integer for an open enum;
- bytes: the id fields codec converts (`Signal.id_paths`, by JSON name) through the same
  `id_bytes` codec uses; any other bytes field decodes as `json_format` does (the same call);
- maps, well-known types, float32 fields and messages nested deeper than `MAX_DEPTH` defer.

tests/collector/receivers/test_otlpjson.py holds this equal to `json_format` on captures,
fuzz corpora and a seeded random corpus (serialized bytes equal, or both refused).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable
from functools import cache
from typing import Any

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

from tooltrail.collector.extract.otlp import configured

MAX_DEPTH = 64  # message nesting handled here; json_format refuses past 100
WELL_KNOWN = "google.protobuf."
_DECIMAL = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")  # what float() reads alike
Convert = Callable[[Any, int], Any]


class Defer(Exception):
    """The fast path does not cover this input: `json_format` decides."""


def id_bytes(value: str) -> bytes:
    """An OTLP/JSON id: hex per the spec, or base64 as protobuf's JSON mapping writes it;
    empty when it is neither (the span is then rejected alone for its bad id)."""
    try:
        return bytes.fromhex(value)
    except ValueError:
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return b""


def _defer(_value: Any, _depth: int) -> Any:
    raise Defer


def _string(value: Any, _depth: int) -> str:
    if type(value) is not str:
        raise Defer
    return value


def _bool(value: Any, _depth: int) -> bool:
    if type(value) is not bool:
        raise Defer
    return value


def _integer(value: Any, _depth: int) -> int:
    kind = type(value)
    if kind is int:
        return int(value)
    if kind is str and value.isascii() and (
            value.isdigit() or (value[:1] == "-" and value[1:].isdigit())):
        return int(value)
    raise Defer


def _double(value: Any, _depth: int) -> float:
    kind = type(value)
    if kind is float and math.isfinite(value):
        return float(value)
    if kind is int:
        return float(value)  # OverflowError past a double: the caller defers
    if kind is str and _DECIMAL.fullmatch(value):
        return float(value)
    raise Defer


def _hex_id(value: Any, _depth: int) -> bytes:
    if type(value) is not str:
        raise Defer
    return id_bytes(value)


def _base64(value: Any, _depth: int) -> bytes:
    if type(value) is not str:
        raise Defer
    encoded = value.encode("utf-8")  # exactly json_format's reading of a bytes field
    return base64.urlsafe_b64decode(encoded + b"=" * (4 - len(encoded) % 4))


class _Enum:
    """The converter of an enum field: a value name of the enum, or an integer if it is open."""

    __slots__ = ("numbers", "open_enum")

    def __init__(self, enum: EnumDescriptor) -> None:
        self.numbers = {name: value.number for name, value in enum.values_by_name.items()}
        self.open_enum = not enum.is_closed

    def __call__(self, value: Any, _depth: int) -> int:
        if type(value) is str and value in self.numbers:
            return self.numbers[value]
        if type(value) is int and self.open_enum:
            return int(value)
        raise Defer


_SCALARS: dict[int, Convert] = {
    FieldDescriptor.TYPE_STRING: _string,
    FieldDescriptor.TYPE_BOOL: _bool,
    FieldDescriptor.TYPE_DOUBLE: _double,
    FieldDescriptor.TYPE_BYTES: _base64,
    **{t: _integer for t in (
        FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_FIXED32, FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SFIXED32, FieldDescriptor.TYPE_SFIXED64)},
}


class _Repeated:
    """The converter of a repeated field: each element by `item`."""

    __slots__ = ("item",)

    def __init__(self, item: Convert) -> None:
        self.item = item

    def __call__(self, value: Any, depth: int) -> list[Any]:
        if type(value) is not list:
            raise Defer
        item = self.item
        out = []
        for v in value:
            if v is None:  # json_format refuses a null element
                raise Defer
            out.append(item(v, depth))
        return out


Entry = tuple[str, Convert | None, str | None]  # (field name, converter or None: a string, oneof)


class _Message:
    """The converter of a message: its JSON object → its constructor's keyword arguments;
    `table` maps each JSON key to its Entry."""

    __slots__ = ("table", "wire")

    def __init__(self) -> None:
        self.table: dict[str, Entry] = {}
        # field name → (number, descriptor type, WIRE_* bits): what `_wire.encode` writes
        self.wire: dict[str, tuple[int, int, int]] = {}

    def __call__(self, value: Any, depth: int) -> dict[str, Any]:
        if type(value) is not dict or depth > MAX_DEPTH:
            raise Defer
        entry_of = self.table.get
        out: dict[str, Any] = {}
        oneofs: set[str] | None = None
        for key, item in value.items():
            entry = entry_of(key)
            if entry is None:  # unknown: skipped, unless json_format refuses it
                if key[:1] == "[" or not key.isascii():  # an extension, a lone surrogate
                    raise Defer
                continue
            field, conv, oneof = entry
            if field in out:  # given under both names: json_format merges or clears
                raise Defer
            if item is None:
                continue
            if oneof is not None:
                if oneofs is None:
                    oneofs = {oneof}
                elif oneof in oneofs:
                    raise Defer
                else:
                    oneofs.add(oneof)
            if conv is None:  # the commonest field, inline
                if type(item) is not str:
                    raise Defer
                out[field] = item
            else:
                out[field] = conv(item, depth + 1)
        return out


WIRE_REPEATED, WIRE_PACKED, WIRE_PRESENCE = 1, 2, 4  # `_Message.wire` mode bits (_wire.c)
IdPaths = tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]  # codec's Signal.id_paths
Trail = tuple[str, ...] | None  # the JSON keys that led to a message, while on an id path


class _Converters:
    """The converters of the message types reached from a request, built once. A message is
    converted according to how it was reached: codec reads hex ids only at the end of its
    `id_paths`, walked by their JSON keys (a proto-name key leaves the path)."""

    def __init__(self, id_paths: IdPaths) -> None:
        self.id_keys = {(path, key) for path, keys in id_paths for key in keys}
        self.prefixes = {path[:i] for path, _ in id_paths for i in range(len(path) + 1)}
        self.messages: dict[tuple[str, Trail], Convert] = {}

    def field(self, field: FieldDescriptor, key: str, trail: Trail) -> Convert:
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            return _defer
        if field.message_type is not None:
            inner = None if trail is None else (*trail, key)
            item = self.message(field.message_type, inner if inner in self.prefixes else None)
        elif field.enum_type is not None:
            item = _Enum(field.enum_type)
        elif trail is not None and (trail, key) in self.id_keys:
            item = _hex_id
        else:
            item = _SCALARS.get(field.type, _defer)
        return _Repeated(item) if field.is_repeated else item

    def message(self, descriptor: Descriptor, trail: Trail = ()) -> Convert:
        name = (descriptor.full_name, trail)
        if name in self.messages:
            return self.messages[name]
        keys = {k for f in descriptor.fields for k in (f.json_name, f.name)}
        if descriptor.full_name.startswith(WELL_KNOWN) or any(
                o.name in keys for o in descriptor.oneofs):  # json_format's names collide
            self.messages[name] = _defer
            return _defer
        convert = _Message()
        self.messages[name] = convert  # before the fields: messages may nest themselves
        for f in descriptor.fields:
            oneof = f.containing_oneof.name if f.containing_oneof is not None else None
            convert.wire[f.name] = (f.number, f.type, (
                (WIRE_REPEATED if f.is_repeated else 0) | (WIRE_PACKED if f.is_packed else 0)
                | (WIRE_PRESENCE if f.has_presence else 0)))
            for key in dict.fromkeys((f.json_name, f.name)):
                conv = self.field(f, key, trail)
                convert.table[key] = (f.name, None if conv is _string else conv, oneof)
        return convert


@cache
def converter(request: Descriptor, ids: IdPaths) -> Convert:
    """The fast path for a request type: its JSON object → its constructor's keyword
    arguments; raises Defer."""
    return _Converters(ids).message(request)


def pure_run(convert: Convert, value: Any, depth: int) -> Any:
    """The reference: a converter applied to `value` in Python."""
    return convert(value, depth)


def _compiled_run() -> Callable[[Convert, Any, int], Any] | None:
    """The same converters interpreted in C (`_wire.convert`: `_Message`, `_Repeated`,
    `_Enum`, `_integer`, `_bool` and hex `_hex_id`s done there, any other converter called),
    when the extension is there and was built from this source (`otlp.configured`)."""
    wire = configured(lambda w: w.configure_otlpjson(
        _Message, _Repeated, _Enum, Defer, MAX_DEPTH, _integer, _hex_id, _bool))
    if wire is None:
        return None
    run: Callable[[Convert, Any, int], Any] = wire.convert
    return run


COMPILED_RUN = _compiled_run()
# chosen once, at import (tests switch it): how `parse` applies a request's converter
run = COMPILED_RUN or pure_run


def pure_encode(convert: Convert, value: Any, request_class: Any) -> bytes:
    """The reference: the request the converter's keyword arguments build, serialised."""
    serialised: bytes = request_class(**run(convert, value, 1)).SerializeToString()
    return serialised


def _compiled_encode() -> Callable[[Convert, Any, Any], bytes] | None:
    """The same bytes written in C from the JSON object (`_wire.encode`: every field read as
    `_wire.convert` reads it, then written as upb serialises it), no message built."""
    if COMPILED_RUN is None:
        return None
    from tooltrail.collector.extract import _wire  # type: ignore[attr-defined]

    write: Callable[[Convert, Any, int], bytes] = _wire.encode
    return lambda convert, value, _request_class: write(convert, value, 1)


COMPILED_ENCODE = _compiled_encode()
# chosen once, at import (tests switch it): how `encoded` writes a request
encode = COMPILED_ENCODE or pure_encode


def encoded(data: Any, request_class: Any, ids: IdPaths) -> bytes:
    """`parse(data, request_class, ids)` serialised (what the compiled walk reads), without
    building the message when the extension is there; raises Defer exactly where `parse`
    does."""
    try:
        return encode(converter(request_class.DESCRIPTOR, ids), data, request_class)
    except Defer:
        raise
    except Exception as exc:  # range, UTF-8, base64, overflow, recursion
        raise Defer from exc


def parse(data: Any, request_class: Any, ids: IdPaths) -> Any:
    """`request_class` built from the JSON object `data` (left unchanged); raises Defer when
    the fast path does not cover it or anything refuses it (then json_format says why)."""
    try:
        return request_class(**run(converter(request_class.DESCRIPTOR, ids), data, 1))
    except Defer:
        raise
    except Exception as exc:  # range, UTF-8, base64, overflow, recursion
        raise Defer from exc
