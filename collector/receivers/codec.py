"""Decoding OTLP request bodies (protobuf, JSON, gzip/deflate) and encoding answers, for
every signal (traces, logs, metrics): one decoder, told which request type to read."""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from collector.errors import InvalidPayload, PayloadTooLarge, UnsupportedMediaType
from collector.ingest import IngestResult
from collector.model import RejectedSpan
from collector.receivers.lenient import salvage

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
CHUNK = 256 * 1024
IdPaths = tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]


@dataclass(frozen=True, slots=True)
class Signal:
    """One OTLP signal: its request and response messages, its partial_success count field,
    and where OTLP/JSON carries hex ids in its request (path of keys to the objects, id keys)."""

    name: str
    request: type[Message]
    response: type[Message]
    rejected_field: str
    id_paths: IdPaths


_EXEMPLARS: IdPaths = tuple(
    (("resourceMetrics", "scopeMetrics", "metrics", kind, "dataPoints", "exemplars"),
     ("traceId", "spanId"))
    for kind in ("gauge", "sum", "histogram", "exponentialHistogram")
)
SIGNALS = {
    signal.name: signal
    for signal in (
        Signal("traces", ExportTraceServiceRequest, ExportTraceServiceResponse,
               "rejected_spans",
               ((("resourceSpans", "scopeSpans", "spans"), ("traceId", "spanId", "parentSpanId")),
                (("resourceSpans", "scopeSpans", "spans", "links"), ("traceId", "spanId")))),
        Signal("logs", ExportLogsServiceRequest, ExportLogsServiceResponse,
               "rejected_log_records",
               ((("resourceLogs", "scopeLogs", "logRecords"), ("traceId", "spanId")),)),
        Signal("metrics", ExportMetricsServiceRequest, ExportMetricsServiceResponse,
               "rejected_data_points", _EXEMPLARS),
    )
}


def media_type(content_type: str | None) -> str:
    """The OTLP media type of a Content-Type header; raises UnsupportedMediaType otherwise."""
    base = (content_type or "").split(";", 1)[0].strip().lower()
    if base in (PROTOBUF, JSON):
        return base
    raise UnsupportedMediaType(
        f"unsupported content type {content_type!r}: use {PROTOBUF} or {JSON}"
    )


def decompress(body: bytes, encoding: str | None, limit: int) -> bytes:
    """Undo Content-Encoding, never producing more than `limit` bytes (a bomb is a 413)."""
    name = (encoding or "identity").strip().lower()
    if name in ("", "identity"):
        return body
    if name == "gzip":
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif name == "deflate":
        inflater = zlib.decompressobj()
    else:
        raise InvalidPayload(f"unsupported content encoding {encoding!r}: use gzip or deflate")
    out = bytearray()
    data = body
    try:
        while data:
            out += inflater.decompress(data, CHUNK)
            if len(out) > limit:
                raise PayloadTooLarge(f"request exceeds {limit} bytes after decompression")
            data = inflater.unconsumed_tail
        out += inflater.flush()
    except zlib.error as exc:
        raise InvalidPayload(f"body is not valid {name}: {exc}") from exc
    if len(out) > limit:
        raise PayloadTooLarge(f"request exceeds {limit} bytes after decompression")
    return bytes(out)


def decode_body(
    body: bytes, media: str, encoding: str | None, limit: int, signal: str = "traces"
) -> tuple[Any, list[RejectedSpan]]:
    """Decompress and parse a request body of `signal`: (request, spans refused while decoding).

    A trace request whose only fault is invalid UTF-8 in some strings keeps its other spans;
    the spans holding bad strings come back as rejected, each with the reason."""
    data = decompress(body, encoding, limit)
    if media != PROTOBUF or signal != "traces":
        return decode_request(data, media, signal), []
    try:
        return decode_request(data, media), []
    except InvalidPayload as exc:
        if "UTF-8" not in str(exc):
            raise
        salvaged = salvage(data)
        if salvaged is None:
            raise
        return salvaged


def decode_request(body: bytes, media: str, signal: str = "traces") -> Any:
    """Parse an Export<Signal>ServiceRequest; raises InvalidPayload when it cannot be parsed."""
    kind = SIGNALS[signal]
    request = kind.request()
    if media == PROTOBUF:
        try:
            request.ParseFromString(body)
        except (DecodeError, ValueError, RecursionError) as exc:
            raise InvalidPayload(f"body is not a valid OTLP protobuf request: {exc}") from exc
        return request
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise InvalidPayload(f"body is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidPayload("OTLP/JSON body must be an object")
    try:
        json_format.ParseDict(_ids_to_base64(data, kind.id_paths), request,
                              ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        raise InvalidPayload(f"body is not a valid OTLP/JSON request: {exc}") from exc
    except SystemError as exc:  # upb on a field name that is a lone surrogate ("\udeba")
        reason = exc.__cause__ or exc
        raise InvalidPayload(f"body is not a valid OTLP/JSON request: {reason}") from exc
    return request


def _hex_to_b64(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        try:  # tolerate producers that send base64, as protobuf's JSON mapping does
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""  # left empty: the span is then rejected alone for its bad id
    return base64.b64encode(raw).decode()


def _ids_to_base64(data: dict[str, Any], id_paths: IdPaths) -> dict[str, Any]:
    """OTLP/JSON carries ids as hex; protobuf's JSON mapping expects base64."""
    for path, keys in id_paths:
        for node in _objects(data, path):
            for key in keys:
                if key in node:
                    node[key] = _hex_to_b64(node[key])
    return data


def _objects(data: dict[str, Any], path: tuple[str, ...]) -> list[dict[str, Any]]:
    """The objects at the end of `path` (each step a list of objects or one object)."""
    nodes = [data]
    for key in path:
        nodes = [child for node in nodes for child in _children(node.get(key))]
    return nodes


def _children(value: Any) -> list[dict[str, Any]]:
    items = value if isinstance(value, list) else [value]
    return [item for item in items if isinstance(item, dict)]


def encode(message: Message, media: str) -> bytes:
    """Serialise a response or status in the request's media type."""
    if media == JSON:
        return json.dumps(json_format.MessageToDict(message)).encode()
    return message.SerializeToString()


def response_for(result: IngestResult, signal: str = "traces") -> Message:
    """The OTLP response of `signal`: empty on full success, else partial_success."""
    kind = SIGNALS[signal]
    response: Any = kind.response()  # each signal's response has its own partial_success
    if result.rejected_spans or result.error_message:
        setattr(response.partial_success, kind.rejected_field, result.rejected_spans)
        response.partial_success.error_message = result.error_message
    answer: Message = response
    return answer


def status_for(code: int, message: str) -> status_pb2.Status:
    """A google.rpc.Status body for an HTTP error answer."""
    return status_pb2.Status(code=code, message=message)
