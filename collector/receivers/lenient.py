"""Salvaging a protobuf request whose faults are confined to some of its spans: invalid UTF-8
in a string field, or attribute values nested deeper than protobuf's parser allows.

Protobuf refuses the whole message for one such span. Parsed again with a schema of the same
wire format where every `string` field is `bytes` and each span is an opaque `bytes` blob, the
request yields its spans; each span that parses strictly on its own (with its resource and
scope) is kept, every other one is rejected alone, with the reason. A span parsed on its own
starts a few levels lower, so a value just past the request's depth limit is still kept.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from tooltrail.collector.model import RejectedSpan

SALVAGEABLE = ("UTF-8", "MaxDepth")  # in protobuf's DecodeError messages: faults of a part
REQUEST = "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest"
SPAN = "opentelemetry.proto.trace.v1.Span"
FieldType = descriptor_pb2.FieldDescriptorProto


def _as_bytes(field: descriptor_pb2.FieldDescriptorProto) -> None:
    field.type = FieldType.TYPE_BYTES
    field.ClearField("type_name")


def _loosen(message: descriptor_pb2.DescriptorProto) -> None:
    for field in message.field:
        # strings read as bytes; a span's contents (and in a span, its messages) left unparsed
        opaque = field.type == FieldType.TYPE_MESSAGE and (
            message.name == "Span" or (message.name == "ScopeSpans" and field.name == "spans"))
        if field.type == FieldType.TYPE_STRING or opaque:
            _as_bytes(field)
    for nested in message.nested_type:
        _loosen(nested)


@cache
def _lenient_pool() -> descriptor_pool.DescriptorPool:
    """The OTLP trace schema with strings as bytes and spans as opaque bytes (same wire
    format): parsing it never fails on a span's strings or nesting."""
    pool = descriptor_pool.DescriptorPool()
    for module in (common_pb2, resource_pb2, trace_pb2, trace_service_pb2):
        proto = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(proto)
        for message in proto.message_type:
            _loosen(message)
        pool.Add(proto)
    return pool


def lenient_request_class() -> Any:
    """ExportTraceServiceRequest read leniently (see _lenient_pool)."""
    return message_factory.GetMessageClass(_lenient_pool().FindMessageTypeByName(REQUEST))


def _lenient_span_class() -> Any:
    """Span with its strings as bytes and its nested messages unparsed: ids and name only."""
    return message_factory.GetMessageClass(_lenient_pool().FindMessageTypeByName(SPAN))


def _fault(exc: DecodeError, where: str) -> str:
    if "MaxDepth" in str(exc):
        return (f"values of the {where} are nested deeper than the protobuf parser allows; "
                "flatten or stringify them")
    if "UTF-8" in str(exc):
        return f"invalid UTF-8 in a string field of the {where}"
    return f"the {where} is not valid protobuf: {exc}"


def _parse(cls: Any, raw: bytes, where: str) -> tuple[Any, str | None]:
    """(strictly parsed message, None) or (None, why it could not be parsed)."""
    try:
        return cls.FromString(raw), None
    except DecodeError as exc:
        return None, _fault(exc, where)


def _rejected(raw: bytes, reason: str) -> RejectedSpan:
    try:
        span = _lenient_span_class().FromString(raw)
    except DecodeError:
        return RejectedSpan("", "", "", reason)
    name = bytes(span.name).decode("utf-8", "replace")[:200]
    return RejectedSpan(bytes(span.trace_id).hex(), bytes(span.span_id).hex(), name, reason)


def salvage(
    body: bytes,
) -> tuple[trace_service_pb2.ExportTraceServiceRequest, list[RejectedSpan]] | None:
    """(the request without the spans that cannot be parsed, those spans as rejected), or None
    when the body is not a request even read leniently (its fault is not within spans)."""
    try:
        loose = lenient_request_class().FromString(body)
    except DecodeError:
        return None
    strict = trace_service_pb2.ExportTraceServiceRequest()
    rejected: list[RejectedSpan] = []
    for rs in loose.resource_spans:
        resource, resource_fault = _parse(resource_pb2.Resource, rs.resource.SerializeToString(),
                                          "span's resource")
        out_rs = strict.resource_spans.add()
        if resource is not None:
            out_rs.resource.CopyFrom(resource)
        for ss in rs.scope_spans:
            scope, scope_fault = (None, resource_fault) if resource_fault else _parse(
                common_pb2.InstrumentationScope, ss.scope.SerializeToString(), "span's scope")
            out_ss = out_rs.scope_spans.add()
            if scope is not None:
                out_ss.scope.CopyFrom(scope)
            for raw in ss.spans:
                span, why = (None, scope_fault) if scope_fault else _parse(
                    trace_pb2.Span, raw, "span")
                if span is not None:
                    out_ss.spans.append(span)
                else:
                    rejected.append(_rejected(raw, why or "the span could not be parsed"))
    return strict, rejected
