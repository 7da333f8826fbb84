"""The one ingest path both receivers share: extract, write, answer what was accepted."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from collector.extract import ExtractOptions, extract
from collector.metrics import Metrics
from collector.model import Batch, RejectedSpan

MAX_ERROR_ROWS = 20  # per request: enough to explain, bounded against hostile input


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What to tell the client: OTLP partial_success fields (zero/empty when all was stored)."""

    rejected_spans: int = 0
    error_message: str = ""


class BatchSink(Protocol):
    """Where ingest sends batches: the writer, or an in-memory sink in tests."""

    def check_room(self, size: int) -> None: ...

    async def write(self, batch: Batch, size: int, errors: list[dict[str, Any]]) -> None: ...

    def record(self, errors: list[dict[str, Any]]) -> None: ...


IngestFn = Callable[[ExportTraceServiceRequest, int, str], Awaitable[IngestResult]]


class Ingest:
    """Callable given to receivers: `await ingest(request, size, transport)`."""

    def __init__(self, sink: BatchSink, metrics: Metrics, options: ExtractOptions) -> None:
        self.sink = sink
        self.metrics = metrics
        self.options = options

    def check_room(self, size: int) -> None:
        """Raise Overloaded before a body of `size` bytes is read, if there is no room for it."""
        self.sink.check_room(size)

    def reject_request(self, transport: str, kind: str, message: str) -> None:
        """Count and keep a request that was refused before extraction."""
        self.metrics.requests.labels(transport, kind).inc()
        self.sink.record([error_row(transport, kind, message)])

    async def __call__(
        self, request: ExportTraceServiceRequest, size: int, transport: str
    ) -> IngestResult:
        batch = extract(request, self.options)
        errors = [
            error_row(transport, kind, s.reason, s)
            for kind, spans in (
                ("rejected_span", batch.rejected),
                ("unextracted", batch.unextracted),
            )
            for s in spans[:MAX_ERROR_ROWS]
        ]
        if not batch.empty or errors:
            await self.sink.write(batch, size, errors)
        m = self.metrics
        m.requests.labels(transport, "partial" if batch.rejected else "ok").inc()
        m.spans.inc(batch.span_count)
        m.tool_calls.inc(len(batch.calls))
        m.rejected_spans.inc(len(batch.rejected))
        m.unextracted_spans.inc(len(batch.unextracted))
        return result_of(batch)


def result_of(batch: Batch) -> IngestResult:
    """partial_success for a batch: invalid spans are rejected; unextractable ones are a warning."""
    if batch.rejected:
        reasons = sorted({s.reason for s in batch.rejected})
        return IngestResult(len(batch.rejected), "rejected spans: " + "; ".join(reasons[:5]))
    if batch.unextracted:
        reasons = sorted({s.reason for s in batch.unextracted})
        return IngestResult(
            0, "stored, but some tool spans were not extracted: " + "; ".join(reasons[:5])
        )
    return IngestResult()


def error_row(
    transport: str, kind: str, message: str, span: RejectedSpan | None = None
) -> dict[str, Any]:
    """A row for the ingest_errors table."""
    return {
        "at": time.time(),
        "kind": kind,
        "transport": transport,
        "message": message[:2000],
        "trace_id": span.trace_id if span else None,
        "span_id": span.span_id if span else None,
        "span_name": span.name[:500] if span else None,
    }
