"""The one ingest path both receivers share: admit, decode + extract + prepare, write, answer.

A receiver first asks for admission (`admit`, before it reads a large body): the sink refuses
with a retryable `Overloaded` when the bytes already admitted would overflow its budget. The
body then goes through the pipeline (decode → extract → prepare rows) — inline for small
bodies, in a process pool (collector.processes) for large ones, since extraction is pure
Python and the service has more than one core — and the prepared batch is written; the
answer is given after commit.
Every OTLP signal takes this path; what differs per signal is its reader (`READERS`): traces
are extracted into tool calls, logs and metrics are validated and counted (collector.readers).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any, Protocol

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tooltrail.collector.errors import InvalidPayload, Overloaded, PayloadTooLarge, StoreUnavailable
from tooltrail.collector.extract import ExtractOptions, extract
from tooltrail.collector.extract.analyze import lossy_counts
from tooltrail.collector.metrics import Metrics
from tooltrail.collector.model import Batch, RejectedSpan
from tooltrail.collector.processes import ChildDied, ProcessPool
from tooltrail.collector.readers import read_logs, read_metrics
from tooltrail.collector.trace_requests import split_by_trace, walk

log = logging.getLogger(__name__)
MAX_ERROR_ROWS = 20  # per request: enough to explain, bounded against hostile input
OVERLOAD_RECORD_SECONDS = 1.0  # refusals for overload are counted always, kept once a second
PROTOBUF = "application/x-protobuf"  # the media type of OTLP/protobuf bodies
# Admission counts memory, not wire bytes: while a request waits for its commit it holds its
# body, its decoded rows (Python objects) and pickling buffers, about this many times its size.
MEMORY_PER_BYTE = 3


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What to tell the client: OTLP partial_success fields (zero/empty when all was stored)."""

    rejected_spans: int = 0
    error_message: str = ""


class Prepared(Protocol):
    """A batch ready for the sink (see store.persist.PreparedBatch)."""

    @property
    def calls(self) -> Sequence[Any]: ...
    @property
    def rejected(self) -> Sequence[RejectedSpan]: ...
    @property
    def unextracted(self) -> Sequence[RejectedSpan]: ...
    @property
    def span_count(self) -> int: ...
    @property
    def truncated(self) -> int: ...
    @property
    def lossy(self) -> Sequence[tuple[str, int]]: ...
    @property
    def empty(self) -> bool: ...


class Ticket(Protocol):
    """Admitted bytes, held until the request is answered."""

    def resize(self, size: int) -> None: ...

    def release(self) -> None: ...


class BatchSink(Protocol):
    """Where ingest sends batches: the writer (collector.store.writer), or in tests
    collector.memory_sink.MemorySink."""

    def admit(self, size: int) -> Ticket: ...

    async def write(self, batch: Any, errors: list[dict[str, Any]]) -> None: ...

    def record(self, errors: list[dict[str, Any]]) -> None: ...


# (body, media type, content encoding, size limit, signal) -> (request, refused spans)
Decoder = Callable[[bytes, str, "str | None", int, str], tuple[Any, list[RejectedSpan]]]


@dataclass(frozen=True, slots=True)
class Reader:
    """How one signal's decoded request becomes a batch: (batch, records received)."""

    # (request, options, the request serialised when the body was that, else None)
    read: Callable[[Any, ExtractOptions, bytes | None], tuple[Batch, int]]
    noun: str  # what its records are called in answers
    error_kind: str  # the ingest_errors kind of a refused record


def read_traces(request: ExportTraceServiceRequest, options: ExtractOptions,
                raw: bytes | None = None) -> tuple[Batch, int]:
    batch = extract_safely(request, options, raw)
    return batch, batch.span_count


def _without_raw(read: Callable[[Any, ExtractOptions], tuple[Batch, int]]) -> Callable[
        [Any, ExtractOptions, bytes | None], tuple[Batch, int]]:
    def reader(request: Any, options: ExtractOptions, raw: bytes | None) -> tuple[Batch, int]:
        return read(request, options)

    return reader


READERS = {
    "traces": Reader(read_traces, "spans", "rejected_span"),
    "logs": Reader(_without_raw(read_logs), "log records", "rejected_log_record"),
    "metrics": Reader(_without_raw(read_metrics), "data points", "rejected_data_point"),
}


@dataclass(frozen=True, slots=True)
class Pipeline:
    """Turning a body into a prepared batch; module-level callables, so it pickles."""

    decode: Decoder
    prepare: Callable[[Batch], Prepared]
    options: ExtractOptions
    limit: int
    # keeps a traces request's raw spans beside its rows (collector.store.archive.pack): the
    # request, its batch, and the body when it is that request serialised already
    archive: Callable[[ExportTraceServiceRequest, Batch, bytes | None],
                      tuple[Any, ...]] | None = None


def run_pipeline(
    pipeline: Pipeline, body: bytes, media: str, encoding: str | None, signal: str = "traces"
) -> tuple[Prepared, int, int]:
    """Decode, read and prepare one body: (prepared batch, decoded size, records received)."""
    request, refused = pipeline.decode(body, media, encoding, pipeline.limit, signal)
    # a protobuf body that decoded whole is the serialised request: its size is the body's,
    # and the compiled walk and the archive read it as received, not serialised again
    whole = body if media == PROTOBUF and not refused and not compressed(encoding) else None
    size = len(whole) if whole is not None else request.ByteSize()
    batch, records = READERS[signal].read(request, pipeline.options, whole)
    batch = with_refused(batch, refused)
    prepared = pipeline.prepare(batch)
    if pipeline.archive is not None and signal == "traces":  # compressed here, off the writer
        prepared = replace(prepared, archive=pipeline.archive(request, batch, whole))  # type: ignore[type-var]
    return prepared, size, records + len(refused)


def compressed(encoding: str | None) -> bool:
    """Whether a body with this Content-Encoding (grpc: None) is compressed."""
    return encoding is not None and encoding.strip().lower() not in ("", "identity")


def with_refused(batch: Batch, refused: Sequence[RejectedSpan]) -> Batch:
    """The batch with the records its decoder had to drop (invalid UTF-8, a span JSON that
    does not map) counted as received and rejected."""
    if not refused:
        return batch
    return replace(batch, rejected=(*refused, *batch.rejected),
                   span_count=batch.span_count + len(refused))


def extract_safely(request: ExportTraceServiceRequest, options: ExtractOptions,
                   raw: bytes | None = None) -> Batch:
    """`extract`, and should it fail on some input, extract trace by trace so that only the
    spans of the trace it fails on are rejected (with the reason), never the whole request.
    `raw`: the request serialised, when the caller holds it (`extract`)."""
    try:
        return extract(request, options, raw)
    except Exception as first:  # extraction is pure; any failure is about this input
        log.warning("extraction failed (%s: %s); isolating traces", type(first).__name__, first)
    calls: list[Any] = []
    traces: list[Any] = []
    rejected: list[RejectedSpan] = []
    unextracted: list[RejectedSpan] = []
    lossy: list[tuple[tuple[str, int], ...]] = []
    count = 0
    for part in split_by_trace(request):
        try:
            batch = extract(part, options)
        except Exception as exc:
            reason = f"could not extract the span's trace: {type(exc).__name__}: {exc}"[:500]
            spans = [span for _, _, span in walk(part)]
            rejected += [RejectedSpan(s.trace_id.hex(), s.span_id.hex(), s.name[:200], reason)
                         for s in spans]
            count += len(spans)
            continue
        calls += batch.calls
        traces += batch.traces
        rejected += batch.rejected
        unextracted += batch.unextracted
        lossy.append(batch.lossy)
        count += batch.span_count
    return Batch(tuple(calls), tuple(traces), tuple(rejected), tuple(unextracted), count,
                 lossy_counts(lossy))


class Offload:
    """Runs the pipeline inline for small bodies and in a process pool for large ones."""

    def __init__(self, pipeline: Pipeline, processes: int, inline_bytes: int,
                 metrics: Metrics | None = None) -> None:
        self.pipeline = pipeline
        self.processes = processes
        self.inline_bytes = inline_bytes
        self.metrics = metrics
        # each child gets the pipeline once, as it starts: it imports what the pipeline needs
        # before the server is ready, and its caches (redaction's plans) last the child's life
        self._pool = ProcessPool(processes, "ingest", context=pipeline) if processes > 0 \
            else None

    async def __aenter__(self) -> Offload:
        if self._pool is not None:
            await self._pool.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop the pool. Safe if never started."""
        if self._pool is not None:
            await self._pool.__aexit__(exc_type, exc, tb)

    async def run(
        self, body: bytes, media: str, encoding: str | None, signal: str = "traces"
    ) -> tuple[Prepared, int, int]:
        """(prepared batch, decoded size, records received) for one body of `signal`."""
        pool = self._pool
        if pool is None or not pool.running or (len(body) < self.inline_bytes
                                                and not compressed(encoding)):
            return run_pipeline(self.pipeline, body, media, encoding, signal)
        try:
            return await pool.run_with_context(run_pipeline, body, media, encoding, signal)
        except ChildDied as exc:  # killed, out of memory: the pool has started anew
            if self.metrics is not None:
                self.metrics.loop_errors.labels("ingest_worker").inc()
            log.error("an ingest worker process died; restarting the pool")
            raise Overloaded("an ingest worker process died; retry", retry_after=1.0) from exc


class Ingest:
    """What receivers are given: admission, then `await ingest.export(...)`."""

    def __init__(self, sink: BatchSink, metrics: Metrics, offload: Offload) -> None:
        self.sink = sink
        self.metrics = metrics
        self.offload = offload
        self._overload_recorded = 0.0

    def admit(self, size: int) -> Ticket:
        """Admit a body of about `size` bytes, before it is read; raises Overloaded."""
        return self.sink.admit(size * MEMORY_PER_BYTE)

    def reject_request(self, transport: str, exc: Exception) -> None:
        """Count (always) and keep (bounded) a request that was refused as a whole."""
        kind = outcome_of(exc)
        self.metrics.requests.labels(transport, kind).inc()
        if isinstance(exc, Overloaded):
            now = time.monotonic()
            if now - self._overload_recorded < OVERLOAD_RECORD_SECONDS:
                return  # a flood of refusals must not become a flood of writes
            self._overload_recorded = now
        self.sink.record([error_row(transport, kind, str(exc))])

    async def export(
        self, body: bytes, media: str, encoding: str | None, transport: str, ticket: Ticket,
        signal: str = "traces",
    ) -> IngestResult:
        """Decode, read, write and answer one request body of `signal` (admitted with
        `ticket`)."""
        started = time.perf_counter()
        batch, size, records = await self.offload.run(body, media, encoding, signal)
        ticket.resize(size * MEMORY_PER_BYTE)
        reader = READERS[signal]
        return await self._write(batch, transport, started, signal, records, reader.noun,
                                 reader.error_kind)

    async def store(self, batch: Batch, transport: str) -> IngestResult:
        """Write a batch read by another way in (`collector.capture`: explicit calls, A2A
        tasks, ADK events) exactly as `export` writes extracted spans: same sink, metrics and
        answer, once committed. The caller holds the request's admission ticket."""
        started = time.perf_counter()
        prepared = self.offload.pipeline.prepare(batch)
        return await self._write(prepared, transport, started, "capture", len(batch.calls),
                                 "calls", "rejected_call")

    async def _write(
        self, batch: Prepared, transport: str, started: float, signal: str, records: int,
        noun: str, error_kind: str,
    ) -> IngestResult:
        """Write and count a prepared batch; `signal` labels its `records` on /metrics
        (`capture` for calls recorded by collector.capture); `noun` names them in answers."""
        errors = [
            error_row(transport, kind, s.reason, s)
            for kind, spans in ((error_kind, batch.rejected),
                                ("unextracted", batch.unextracted))
            for s in spans[:MAX_ERROR_ROWS]
        ]
        m = self.metrics
        spans = signal == "traces"  # refused log records and data points are not spans
        if not batch.empty or errors:
            try:
                await self.sink.write(batch, errors)
            except Exception as exc:  # counted, then answered by the receiver
                if spans:
                    m.refused_spans.labels(transport, outcome_of(exc)).inc(batch.span_count)
                raise
        m.requests.labels(transport, "partial" if batch.rejected else "ok").inc()
        m.records.labels(signal, transport).inc(records)
        m.tool_calls.inc(len(batch.calls))
        if spans:
            m.accepted_spans.labels(transport).inc(batch.span_count - len(batch.rejected))
            m.refused_spans.labels(transport, "invalid").inc(len(batch.rejected))
        m.unextracted_spans.inc(len(batch.unextracted))
        m.truncated_values.inc(batch.truncated)
        for kind, n in batch.lossy:
            m.lossy_values.labels(kind).inc(n)
        m.ingest_seconds.labels(transport).observe(time.perf_counter() - started)
        return result_of(batch, noun)


def outcome_of(exc: Exception) -> str:
    """The `outcome` label of a refused request."""
    if isinstance(exc, StoreUnavailable):
        return "unavailable"
    if isinstance(exc, Overloaded):
        return "overloaded"
    if isinstance(exc, PayloadTooLarge):
        return "too_large"
    return "invalid" if isinstance(exc, InvalidPayload) else "error"


def result_of(batch: Prepared, noun: str = "spans") -> IngestResult:
    """partial_success for a batch: invalid records are rejected; the rest are warnings."""
    if batch.rejected:
        reasons = sorted({s.reason for s in batch.rejected})
        return IngestResult(len(batch.rejected), f"rejected {noun}: " + "; ".join(reasons[:5]))
    warnings = []
    if batch.unextracted:
        reasons = sorted({s.reason for s in batch.unextracted})
        warnings.append("some tool spans were not extracted: " + "; ".join(reasons[:5]))
    if batch.truncated:
        warnings.append(f"{batch.truncated} oversized values were truncated")
    if batch.lossy:
        kinds = ", ".join(f"{kind} {n}" for kind, n in batch.lossy)
        warnings.append(f"values JSON or the store cannot hold were converted ({kinds}; "
                        "see docs/values.md)")
    if warnings:
        return IngestResult(0, "stored, but " + "; ".join(warnings))
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
        "trace_id": span.trace_id[:64] if span else None,
        "span_id": span.span_id[:64] if span else None,
        "span_name": span.name[:500] if span else None,
    }


@contextlib.contextmanager
def admitted(ingest: Ingest, size: int) -> Iterator[Ticket]:
    """`with admitted(ingest, size) as ticket:` — the ticket is released on leaving."""
    ticket = ingest.admit(size)
    try:
        yield ticket
    finally:
        ticket.release()
