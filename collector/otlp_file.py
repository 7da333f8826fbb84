"""Recording an agent's spans to a file that `tooltrail check` reads: OTLP/JSON Lines.

A `SpanExporter` for the OpenTelemetry Python SDK. Each `export` call writes one line: the
batch as one OTLP/JSON `ExportTraceServiceRequest` (ids in hex, enums as integers, as the OTLP
specification's JSON encoding says and the OpenTelemetry Collector's `file` exporter writes),
so a run recorded in CI is scored offline exactly as a server would score it:

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from tooltrail import OTLPJsonLinesSpanExporter

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPJsonLinesSpanExporter("run.jsonl")))

The file is opened for appending at the first export (several runs may share one file) and
each line is flushed whole before `export` returns, so a process that dies loses at most the
batch it was writing. Needs only the OpenTelemetry SDK and its OTLP protobuf encoder.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

# Bytes fields of a trace request that OTLP/JSON writes as hex (protobuf's own JSON mapping
# writes them as base64).
ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def request_json(request: ExportTraceServiceRequest) -> str:
    """A trace request as one line of OTLP/JSON."""
    message = json_format.MessageToDict(request, use_integers_for_enums=True)
    for resource in message.get("resourceSpans", ()):
        for scope in resource.get("scopeSpans", ()):
            for span in scope.get("spans", ()):
                _hex_ids(span)
                for link in span.get("links", ()):
                    _hex_ids(link)
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"))


def _hex_ids(item: dict[str, Any]) -> None:
    for key in ID_FIELDS:
        if key in item:
            item[key] = base64.b64decode(item[key]).hex()


class OTLPJsonLinesSpanExporter(SpanExporter):
    """Appends each exported batch to `path` (or writes to an open text stream) as one line of
    OTLP/JSON. Thread-safe; after `shutdown` every export fails, as the SDK's exporters do."""

    def __init__(self, path: str | Path | IO[str]) -> None:
        self._path: Path | None = None
        self._stream: IO[str] | None = None
        if isinstance(path, str | Path):
            self._path = Path(path)  # opened at the first export, closed by shutdown
        else:
            self._stream = path  # the caller's: flushed, never closed
        self._owned = self._path is not None
        self._lock = threading.Lock()
        self._closed = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not spans:
            return SpanExportResult.SUCCESS
        if self._closed:  # read again under the lock: this only saves the encoding
            return SpanExportResult.FAILURE
        line = request_json(encode_spans(spans)) + "\n"
        with self._lock:
            if self._closed:
                return SpanExportResult.FAILURE
            try:
                if self._stream is None and self._path is not None:
                    self._stream = self._path.open("a", encoding="utf-8")
                assert self._stream is not None
                self._stream.write(line)
                self._stream.flush()
            except OSError:
                return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        with self._lock:
            if self._stream is not None and not self._closed:
                try:
                    self._stream.flush()
                except OSError:
                    return False
        return True

    def shutdown(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._stream is not None and self._owned:
                self._stream.close()
