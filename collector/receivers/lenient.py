"""Salvaging a protobuf request whose only fault is invalid UTF-8 in some string fields.

Protobuf refuses the whole message for one bad string. Parsed again with the same schema but
every `string` field read as `bytes`, the request yields its spans; each span (with its
resource and scope) that re-parses strictly is kept, every other one is rejected alone.
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

from collector.model import RejectedSpan

REQUEST = "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest"


def _bytes_for_strings(message: descriptor_pb2.DescriptorProto) -> None:
    for field in message.field:
        if field.type == descriptor_pb2.FieldDescriptorProto.TYPE_STRING:
            field.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
    for nested in message.nested_type:
        _bytes_for_strings(nested)


@cache
def lenient_request_class() -> Any:
    """ExportTraceServiceRequest with every string field typed as bytes (same wire format)."""
    pool = descriptor_pool.DescriptorPool()
    for module in (common_pb2, resource_pb2, trace_pb2, trace_service_pb2):
        proto = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(proto)
        for message in proto.message_type:
            _bytes_for_strings(message)
        pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(REQUEST))


def _valid(cls: Any, lenient: Any) -> bool:
    try:
        cls.FromString(lenient.SerializeToString())
    except DecodeError:
        return False
    return True


def salvage(
    body: bytes,
) -> tuple[trace_service_pb2.ExportTraceServiceRequest, list[RejectedSpan]] | None:
    """(the request without the spans holding invalid UTF-8, those spans as rejected), or None
    when the body is not a request even read leniently."""
    try:
        loose = lenient_request_class().FromString(body)
    except DecodeError:
        return None
    strict = trace_service_pb2.ExportTraceServiceRequest()
    rejected: list[RejectedSpan] = []
    for rs in loose.resource_spans:
        resource_ok = _valid(resource_pb2.Resource, rs.resource)
        out_rs = strict.resource_spans.add()
        if resource_ok:
            out_rs.resource.ParseFromString(rs.resource.SerializeToString())
        for ss in rs.scope_spans:
            scope_ok = resource_ok and _valid(common_pb2.InstrumentationScope, ss.scope)
            out_ss = out_rs.scope_spans.add()
            if scope_ok:
                out_ss.scope.ParseFromString(ss.scope.SerializeToString())
            for span in ss.spans:
                good = trace_pb2.Span()
                try:
                    if scope_ok:
                        good.ParseFromString(span.SerializeToString())
                except DecodeError:
                    scope_ok_for_span = False
                else:
                    scope_ok_for_span = scope_ok
                if scope_ok_for_span:
                    out_ss.spans.append(good)
                    continue
                where = "span" if scope_ok else "span's resource or scope"
                rejected.append(RejectedSpan(
                    bytes(span.trace_id).hex(), bytes(span.span_id).hex(),
                    bytes(span.name).decode("utf-8", "replace")[:200],
                    f"invalid UTF-8 in a string field of the {where}",
                ))
    return strict, rejected
