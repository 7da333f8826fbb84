"""What OTLP logs and metrics requests contribute.

Both go through the one ingest path traces take (admit → decode → read → prepare → write →
answer); only the reader differs. `read_logs` validates and counts log records and turns the
GenAI events among them (tool-call content in log records, `collector.extract.log_records`) into the
same kind of Batch rows trace extraction gives; other records are dropped. Metrics are
validated, counted and dropped. Both return the records they refuse (partial_success).
"""

from __future__ import annotations

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.metrics.v1 import metrics_pb2

from tooltrail.collector.extract import ExtractOptions, is_plumbing
from tooltrail.collector.extract.analyze import lossy_counts
from tooltrail.collector.extract.decoding import noting
from tooltrail.collector.extract.log_records import LogCalls, event_name
from tooltrail.collector.extract.otlp import MAX_TIME_NS, attributes
from tooltrail.collector.model import Batch, RejectedSpan

MAX_NAME = 200


def id_fault(trace_id: bytes, span_id: bytes) -> str | None:
    """Why a record's trace/span ids are invalid (OTLP: absent, or 16 and 8 bytes)."""
    if len(trace_id) not in (0, 16):
        return f"trace_id must be 16 bytes (or absent), got {len(trace_id)}"
    if len(span_id) not in (0, 8):
        return f"span_id must be 8 bytes (or absent), got {len(span_id)}"
    return None


def record_fault(record: LogRecord) -> str | None:
    """Why a log record is refused: invalid ids, or a time no clock produced."""
    fault = id_fault(record.trace_id, record.span_id)
    if fault is not None:
        return fault
    for what in ("time_unix_nano", "observed_time_unix_nano"):
        if getattr(record, what) > MAX_TIME_NS:
            return f"{what} {getattr(record, what)} is out of range (at most {MAX_TIME_NS})"
    return None


def read_logs(request: ExportLogsServiceRequest, options: ExtractOptions) -> tuple[Batch, int]:
    """(what the log records contribute, how many were received)."""
    rejected: list[RejectedSpan] = []
    count = 0
    found = LogCalls(options.conversation_keys,
                     lambda name: options.keep_plumbing or not is_plumbing(name))
    with noting() as lossy:
        for rl in request.resource_logs:
            resource = attributes(rl.resource.attributes)
            for sl in rl.scope_logs:
                for record in sl.log_records:
                    count += 1
                    fault = record_fault(record) or found.add(record, resource, sl.scope.name)
                    if fault is not None:
                        name = event_name(record, {}) or "log record"
                        rejected.append(RejectedSpan(record.trace_id.hex(), record.span_id.hex(),
                                                     name[:MAX_NAME], fault))
        calls, traces = found.rows()
    return Batch(tuple(calls), tuple(traces), tuple(rejected), lossy=lossy_counts([lossy])), count


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
