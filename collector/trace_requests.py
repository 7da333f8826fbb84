"""OTLP trace requests (protobuf messages) walked and split, outside extraction.

`walk` is the resource → scope → span walk for code that needs the protobuf resource and scope
of each span (splitting, rejecting a request's spans). collector.extract.otlp.iter_spans is the
walk of extraction: it decodes each resource's attributes once as it goes, which this walk
leaves to its caller.
"""

from __future__ import annotations

from collections.abc import Iterator

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span


def walk(request: ExportTraceServiceRequest) -> Iterator[tuple[ResourceSpans, ScopeSpans, Span]]:
    """Every span of the request, in order, with the resource and scope it was sent under."""
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                yield rs, ss, span


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
