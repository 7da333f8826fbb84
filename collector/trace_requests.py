"""OTLP trace requests (protobuf messages) split by trace, outside extraction, over the one
resource → scope → span walk (`collector.extract.otlp.walk`, re-exported here)."""

from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tooltrail.collector.extract.otlp import walk

__all__ = ["split_by_trace", "walk"]


def split_by_trace(request: ExportTraceServiceRequest) -> list[ExportTraceServiceRequest]:
    """One request per trace id, each keeping its spans' resources and scopes."""
    parts: dict[bytes, ExportTraceServiceRequest] = {}
    for rs, ss, span in walk(request):
        part = parts.get(span.trace_id)
        if part is None:
            part = parts[span.trace_id] = ExportTraceServiceRequest()
        if not part.resource_spans or part.resource_spans[-1].resource != rs.resource:
            target_rs = part.resource_spans.add()
            target_rs.resource.CopyFrom(rs.resource)
            target_rs.schema_url = rs.schema_url
        target_rs = part.resource_spans[-1]
        if not target_rs.scope_spans or target_rs.scope_spans[-1].scope != ss.scope:
            target_ss = target_rs.scope_spans.add()
            target_ss.scope.CopyFrom(ss.scope)
        target_rs.scope_spans[-1].spans.append(span)
    return list(parts.values())
