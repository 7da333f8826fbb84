"""What OTLP logs and metrics requests contribute: for now, validated and counted, then dropped.

Both go through the one ingest path traces take (admit → decode → read → prepare → write →
answer); only the reader differs. `read_logs` is the seam where GenAI events (log records
such as `gen_ai.tool.message`) will become tool calls: it returns a Batch like trace
extraction does, today with nothing to store, and the records it refuses (partial_success).
"""

from __future__ import annotations

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.metrics.v1 import metrics_pb2

from collector.extract import ExtractOptions
from collector.model import Batch, RejectedSpan

MAX_NAME = 200


def id_fault(trace_id: bytes, span_id: bytes) -> str | None:
    """Why a record's trace/span ids are invalid (OTLP: absent, or 16 and 8 bytes)."""
    if len(trace_id) not in (0, 16):
        return f"trace_id must be 16 bytes (or absent), got {len(trace_id)}"
    if len(span_id) not in (0, 8):
        return f"span_id must be 8 bytes (or absent), got {len(span_id)}"
    return None


def read_logs(request: ExportLogsServiceRequest, options: ExtractOptions) -> tuple[Batch, int]:
    """(what the log records contribute, how many were received)."""
    rejected: list[RejectedSpan] = []
    count = 0
    for rl in request.resource_logs:
        for sl in rl.scope_logs:
            for record in sl.log_records:
                count += 1
                fault = id_fault(record.trace_id, record.span_id)
                if fault is not None:
                    name = record.event_name or "log record"
                    rejected.append(RejectedSpan(record.trace_id.hex(), record.span_id.hex(),
                                                 name[:MAX_NAME], fault))
    return Batch((), (), tuple(rejected)), count


def point_fault(kind: str, point: object) -> str | None:
    """Why a metric data point is invalid: ids of its exemplars, or histogram buckets that do
    not fit their bounds (OTLP: one more count than bounds, when counts are given)."""
    for exemplar in getattr(point, "exemplars", ()):
        fault = id_fault(exemplar.trace_id, exemplar.span_id)
        if fault is not None:
            return f"exemplar {fault}"
    if kind == "histogram":
        assert isinstance(point, metrics_pb2.HistogramDataPoint)
        counts, bounds = len(point.bucket_counts), len(point.explicit_bounds)
        if counts and counts != bounds + 1:
            return f"histogram has {counts} bucket counts for {bounds} explicit bounds"
    return None


def read_metrics(
    request: ExportMetricsServiceRequest, options: ExtractOptions
) -> tuple[Batch, int]:
    """(nothing to store, how many data points were received); invalid points are rejected."""
    rejected: list[RejectedSpan] = []
    count = 0
    for rm in request.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                kind = metric.WhichOneof("data")
                if kind is None:
                    continue  # no data points to count or refuse
                for point in getattr(metric, kind).data_points:
                    count += 1
                    fault = point_fault(kind, point)
                    if fault is not None:
                        rejected.append(RejectedSpan("", "", metric.name[:MAX_NAME], fault))
    return Batch((), (), tuple(rejected)), count
