"""The one walk over an OTLP request (resource → scope → span), into plain Python views."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from tooltrail.collector.extract import decoding
from tooltrail.collector.extract.decoding import (
    BIG_INT,
    DUPLICATE_KEY,
    INVALID_TEXT,
    NON_FINITE,
    TOO_DEEP,
    non_finite,
    note,
)
from tooltrail.collector.model import RejectedSpan, ToolCall, storable_text

MAX_DEPTH = 32  # nested arrays / kvlists deeper than this are cut, not recursed into
# The store keeps times in signed 64-bit columns (nanoseconds up to the year 2262): a span
# timestamp above this is not a time any clock produced, so the span is rejected, not clamped.
MAX_TIME_NS = 2**63 - 1


@dataclass(slots=True)  # not frozen, as SpanView
class Event:
    """A span event: its name and attributes."""

    name: str
    time_ns: int
    attributes: dict[str, Any]


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs a call per field
class SpanView:
    """One span with its resource, decoded to plain Python values (read-only by contract)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    scope: str
    status_error: bool
    status_message: str
    events: tuple[Event, ...]

    @property
    def service(self) -> str | None:
        """The resource's `service.name`, if any."""
        value = self.resource.get("service.name")
        return str(value) if value is not None else None


class BadSpan(ValueError):
    """A span whose identity is invalid; it is rejected alone."""


def any_value(value: AnyValue, depth: int = 0) -> Any:
    """Convert an OTLP AnyValue to a JSON-like Python value."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "string_value":
        return clean_text(value.string_value)
    if kind == "bool_value":
        return value.bool_value
    if kind == "int_value":
        return value.int_value
    if kind == "double_value":
        return non_finite(value.double_value)
    if kind == "bytes_value":
        return value.bytes_value.hex()
    if depth >= MAX_DEPTH:
        note(TOO_DEEP)
        return None
    if kind == "array_value":
        return [any_value(v, depth + 1) for v in value.array_value.values]
    return {kv.key: any_value(kv.value, depth + 1) for kv in value.kvlist_value.values}


def clean_text(text: str) -> str:
    """`text` as stored (`collector.model.storable_text`), each replacement noted."""
    return storable_text(text, _invalid_text)


def _invalid_text() -> None:
    note(INVALID_TEXT)


def attributes(pairs: Any) -> dict[str, Any]:
    """Decode a repeated KeyValue field into a dict (a later duplicate key wins, noted).

    Every span's attributes pass here, so the common values (ASCII text without NUL, ints,
    bools) are read inline; anything else takes `clean_text` / `any_value`, which note what
    they convert. The result is exactly `{clean_text(k): any_value(v)}`."""
    out: dict[str, Any] = {}
    kv: KeyValue
    for kv in pairs:
        key = kv.key
        if "\x00" in key or not key.isascii():
            key = clean_text(key)
        value = kv.value
        text = value.string_value  # non-empty only when the value is a string
        if text:
            out[key] = text if text.isascii() and "\x00" not in text else clean_text(text)
            continue
        kind = value.WhichOneof("value")
        if kind == "string_value":
            out[key] = text
        elif kind == "int_value":
            out[key] = value.int_value
        elif kind == "bool_value":
            out[key] = value.bool_value
        else:
            out[key] = any_value(value)
    if len(out) != len(pairs):
        note(DUPLICATE_KEY)
    return out


def _hex_id(raw: bytes, size: int, what: str) -> str:
    if len(raw) != size:
        raise BadSpan(f"{what} must be {size} bytes, got {len(raw)}")
    if raw == bytes(size):
        raise BadSpan(f"{what} is all zeros")
    return raw.hex()


def _time(value: int, what: str) -> int:
    if value > MAX_TIME_NS:
        raise BadSpan(f"{what} {value} is out of range (at most {MAX_TIME_NS}, the year 2262)")
    return value


def span_view(span: Span, resource: dict[str, Any], scope: str) -> SpanView:
    """Decode one span; raises BadSpan when its ids or timestamps are invalid."""
    raw_trace, raw_span, raw_parent = span.trace_id, span.span_id, span.parent_span_id
    trace_id = _hex_id(raw_trace, 16, "trace_id")
    span_id = _hex_id(raw_span, 8, "span_id")
    start, end = span.start_time_unix_nano, span.end_time_unix_nano
    if start > MAX_TIME_NS or end > MAX_TIME_NS:
        _time(start, "start_time_unix_nano")
        _time(end, "end_time_unix_nano")
    parent = raw_parent.hex() if raw_parent and any(raw_parent) else None
    if parent is not None and len(raw_parent) != 8:
        raise BadSpan(f"parent_span_id must be 8 bytes, got {len(raw_parent)}")
    name = span.name
    status = span.status
    message = status.message
    return SpanView(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name if name.isascii() and "\x00" not in name else clean_text(name),
        start_ns=start,
        end_ns=end if end > start else start,
        attributes=attributes(span.attributes),
        resource=resource,
        scope=scope,
        status_error=status.code == Status.STATUS_CODE_ERROR,
        status_message=clean_text(message) if message else message,
        events=tuple(
            Event(clean_text(e.name), e.time_unix_nano, attributes(e.attributes))
            for e in span.events
        ) if span.events else (),
    )


def walk(request: ExportTraceServiceRequest) -> Iterator[tuple[ResourceSpans, ScopeSpans, Span]]:
    """The one resource → scope → span walk: every span of the request, in order, with the
    resource and scope it was sent under (as protobuf messages)."""
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                yield rs, ss, span


def iter_spans(request: ExportTraceServiceRequest) -> Iterator[tuple[Span, dict[str, Any], str]]:
    """Every span of the request (`walk`) with its decoded resource attributes, decoded once
    per resource, and scope name. A resource without spans is not decoded."""
    last: ResourceSpans | None = None
    resource: dict[str, Any] = {}
    for rs, ss, span in walk(request):
        if rs is not last:
            last, resource = rs, attributes(rs.resource.attributes)
        yield span, resource, ss.scope.name


# A span of a request as extraction takes it: (its view, its name as sent) or, for a span
# whose identity is invalid, (None, why it is rejected).
SpanItem = tuple[SpanView, str] | tuple[None, RejectedSpan]


def pure_span_views(request: ExportTraceServiceRequest, raw: bytes | None = None) -> list[
        SpanItem]:
    """The reference: every span of the request (`iter_spans`) decoded by `span_view`. `raw`
    (the request serialised, when the caller holds it) is not needed here."""
    out: list[SpanItem] = []
    for span, resource, scope in iter_spans(request):
        try:
            out.append((span_view(span, resource, scope), span.name))
        except BadSpan as exc:
            out.append((None, RejectedSpan(span.trace_id.hex(), span.span_id.hex(), span.name,
                                           str(exc))))
    return out


# (request, the request serialised or None) -> its span items
SpanViews = Callable[[ExportTraceServiceRequest, bytes | None], list[SpanItem]]


_STALE = False  # an extension was found but is older than this source


def extension() -> Any:
    """The compiled extension (`_wire.c`, which `setup.py` builds), or None when it was not
    built or `TOOLTRAIL_PURE_PYTHON` is `1`: what every compiled path is chosen by."""
    if os.environ.get("TOOLTRAIL_PURE_PYTHON") == "1":
        return None
    try:
        from tooltrail.collector.extract import _wire  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _wire


def configured(configure: Callable[[Any], None]) -> Any:
    """The extension (`extension()`) once `configure(it)` has handed it what it calls back,
    or None: not built, or built from an older `_wire.c` than this source (an editable install
    not rebuilt since; `configure` fails on it), which `walk_description` then says. Every
    compiled path takes the extension through here: the reference, never a half-configured
    extension."""
    global _STALE
    wire = extension()
    if wire is None:
        return None
    try:
        configure(wire)
    except (AttributeError, TypeError):
        _STALE = True
        return None
    return wire


def _configure_walk(wire: Any) -> None:
    wire.configure(SpanView, Event, RejectedSpan, clean_text, non_finite, note, TOO_DEEP,
                   DUPLICATE_KEY)
    wire.configure_json(NON_FINITE, BIG_INT, DUPLICATE_KEY, note, json.JSONDecodeError)
    wire.configure_calls(ToolCall, len(TOOL_CALL_FIELDS))


# (every field of a ToolCall, positional, in field order) -> the ToolCall
MakeCall = Callable[..., ToolCall]
# the order the positional calls of `tool_call` (fields.build_call, requests.request_rows) give
TOOL_CALL_FIELDS = ("trace_id", "span_id", "parent_span_id", "name", "call_id", "arguments",
                    "arguments_raw", "result", "error", "status", "start_ns", "end_ns",
                    "convention", "attributes", "step", "executed", "source")
if tuple(f.name for f in fields(ToolCall)) != TOOL_CALL_FIELDS:
    raise RuntimeError("ToolCall's fields changed: update TOOL_CALL_FIELDS and the calls of "
                       "otlp.tool_call")


def _compiled() -> tuple[SpanViews, Callable[[str], Any], MakeCall] | None:
    """The same walk over the request's wire format in C (`_wire.c`), the same JSON
    decoding of attribute values (`decoding.pure_decode_json`), and the same ToolCall made
    from its fields (`ToolCall`), when it was built and `TOOLTRAIL_PURE_PYTHON` is not `1`."""
    _wire = configured(_configure_walk)
    if _wire is None:
        return None
    views, loads, pure = _wire.views, _wire.loads, decoding.pure_decode_json

    def compiled_decode_json(text: str) -> Any:
        return loads(text, pure)  # text a lone surrogate keeps from UTF-8: `pure`

    def compiled_span_views(request: ExportTraceServiceRequest,
                            raw: bytes | None = None) -> list[SpanItem]:
        """`raw` is the request serialised when the caller holds it (a protobuf body that
        parsed whole into `request`): walked as received, not serialised again."""
        try:
            return views(request.SerializeToString() if raw is None else raw)  # type: ignore[no-any-return]
        except ValueError:  # not the wire format it walks (cannot happen after a parse)
            return pure_span_views(request)

    return compiled_span_views, compiled_decode_json, _wire.tool_call


_COMPILED = _compiled()
COMPILED_WALK, COMPILED_JSON, COMPILED_CALL = (
    _COMPILED if _COMPILED is not None else (None, None, None))
# chosen once, at import: extraction calls `span_views`, `decoding.decode_json` and
# `tool_call` (`walk_description()` says which run); tests switch the three together
span_views: SpanViews = COMPILED_WALK or pure_span_views
if COMPILED_JSON is not None:
    decoding.decode_json = COMPILED_JSON
# a ToolCall from all its fields, positional: the dataclass itself (the reference), or the
# compiled walk's maker, which fills its slots as calling it does
tool_call: MakeCall = COMPILED_CALL or ToolCall


def walk_description() -> str:
    """One line saying which walk extraction runs, for `serve`'s log."""
    if COMPILED_WALK is not None:
        return ("extraction walks OTLP and decodes attribute JSON with the compiled walk "
                "(tooltrail.collector.extract._wire)")
    why = ("TOOLTRAIL_PURE_PYTHON=1" if os.environ.get("TOOLTRAIL_PURE_PYTHON") == "1"
           else "the C extension is older than its source: reinstall to rebuild it" if _STALE
           else "the C extension was not built")
    return f"extraction walks OTLP in pure Python, slower ({why})"
