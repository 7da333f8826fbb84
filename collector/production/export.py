"""Verdicts back into OpenTelemetry: each result as a `gen_ai.evaluation.result` event.

The GenAI semantic conventions' evaluation event (a log record with that event name) carries
`gen_ai.evaluation.name` (the expectation id), `gen_ai.evaluation.score.value`,
`gen_ai.evaluation.score.label` (`pass` | `fail`) and `gen_ai.evaluation.explanation` (the
reason), and is parented to the span it judges: here the root span of the conversation's turn
(the judged turn for a per-turn result, the last turn for a whole-conversation one). Records
go through the OpenTelemetry SDK's batch processor, whose queue is bounded and whose exports
run on its own thread: `emit` never waits on the network; an endpoint that is down costs the
records of the exports that failed (counted) and, once the queue is full, the newest records.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry._logs import LogRecord, SeverityNumber
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExportResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from prometheus_client import CollectorRegistry, Counter

from tooltrail.collector import __version__
from tooltrail.collector.production.evaluation import Verdict

log = logging.getLogger(__name__)
EVENT = "gen_ai.evaluation.result"
EXPORT_TIMEOUT = 5.0  # seconds one export may take (on the processor's thread)


class _CountingExporter(OTLPLogExporter):
    """The SDK's OTLP/HTTP log exporter, counting the records each export delivered or lost."""

    def __init__(self, counter: Counter, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._counter = counter

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        try:
            result = super().export(batch)
        except Exception:  # the processor's thread: count, never raise into it
            result = LogRecordExportResult.FAILURE
        outcome = "exported" if result == LogRecordExportResult.SUCCESS else "failed"
        self._counter.labels(outcome).inc(len(batch))
        return result


class EvaluationExporter:
    """Emits verdicts as `gen_ai.evaluation.result` events over OTLP/HTTP."""

    def __init__(
        self,
        endpoint: str,
        headers: dict[str, str],
        registry: CollectorRegistry,
        *,
        max_queue: int = 2048,
        delay_seconds: float = 1.0,
    ) -> None:
        url = endpoint.rstrip("/")
        if not url.endswith("/v1/logs"):
            url += "/v1/logs"
        self.records = Counter(
            "tooltrail_evaluation_export_records",
            "verdicts sent as gen_ai.evaluation.result events, by outcome (exported | "
            "failed: the endpoint refused them or could not be reached)",
            ["outcome"], registry=registry)
        self.provider = LoggerProvider(
            resource=Resource.create({"service.name": "tooltrail",
                                      "service.version": __version__}),
            shutdown_on_exit=False)
        exporter = _CountingExporter(self.records, endpoint=url, headers=headers,
                                     timeout=EXPORT_TIMEOUT)
        self.processor = BatchLogRecordProcessor(
            exporter, max_queue_size=max_queue, schedule_delay_millis=delay_seconds * 1000,
            export_timeout_millis=EXPORT_TIMEOUT * 1000)
        self.provider.add_log_record_processor(self.processor)
        self.logger = self.provider.get_logger("tooltrail.evaluation", __version__)

    def emit(self, verdicts: Sequence[Verdict]) -> None:
        """Queue one event per verdict; returns at once whatever the endpoint does."""
        for v in verdicts:
            context = None
            if v.trace_id and v.span_id:
                parent = SpanContext(int(v.trace_id, 16), int(v.span_id, 16), is_remote=True,
                                     trace_flags=TraceFlags(TraceFlags.SAMPLED))
                context = trace.set_span_in_context(NonRecordingSpan(parent))
            self.logger.emit(LogRecord(
                context=context,
                event_name=EVENT,
                severity_number=SeverityNumber.INFO,
                attributes={
                    "gen_ai.evaluation.name": v.expectation,
                    "gen_ai.evaluation.score.value": v.score,
                    "gen_ai.evaluation.score.label": "pass" if v.passed else "fail",
                    "gen_ai.evaluation.explanation": v.reason,
                    "tooltrail.expectation.version": v.expectation_version,
                    "tooltrail.evaluation.passed": v.passed,
                    "tooltrail.evaluation.scope": v.scope,
                    "gen_ai.conversation.id": v.conversation,
                },
            ))

    def shutdown(self) -> None:
        """Flush what is queued (bounded by the export timeout), then stop."""
        self.provider.shutdown()
