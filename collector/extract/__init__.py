"""Pure extraction: an OTLP request in, the tool calls and conversation/turn facts out.

Modules: `otlp` (the one resource → scope → span walk), `conventions` (is this span a tool
execution?), `fields` + `events` + `decoding` (reading and decoding a call's fields), `requests`
(calls the model asked for), `traces` (conversation key, turn root), `analyze` (the pass over
one request), `reconcile` (each call once, with steps, at read time), `log_records` (the
same content read from OTLP log events, `collector.readers.read_logs`).
"""

from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tooltrail.collector.extract.analyze import (
    DEFAULT_CONVERSATION_KEYS,
    ExtractOptions,
    analyze,
    is_plumbing,
)
from tooltrail.collector.extract.reconcile import reconcile, reconcile_rows
from tooltrail.collector.model import Batch

__all__ = [
    "DEFAULT_CONVERSATION_KEYS",
    "ExtractOptions",
    "analyze",
    "extract",
    "is_plumbing",
    "reconcile",
    "reconcile_rows",
]


def extract(request: ExportTraceServiceRequest, options: ExtractOptions | None = None,
            raw: bytes | None = None) -> Batch:
    """Turn one OTLP request into a Batch. Bad spans are rejected alone, with a reason.
    `raw`: the request serialised, when the caller holds it (a protobuf body that parsed
    whole): the compiled walk reads it instead of serialising the request again."""
    return analyze(request, options, raw=raw).batch
