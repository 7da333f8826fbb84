"""Decoding OTLP request bodies (protobuf, JSON, gzip/deflate) and encoding answers, for
every signal (traces, logs, metrics): one decoder, told which request type to read."""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import orjson
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
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tooltrail.collector.errors import InvalidPayload, PayloadTooLarge, UnsupportedMediaType
from tooltrail.collector.ingest import PROTOBUF as PROTOBUF  # defined where ingest needs it
from tooltrail.collector.ingest import IngestResult
from tooltrail.collector.model import RejectedSpan
from tooltrail.collector.receivers import otlpjson
from tooltrail.collector.receivers.lenient import SALVAGEABLE, salvage

JSON = "application/json"
CHUNK = 256 * 1024
IdPaths = tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]
MessageT = TypeVar("MessageT", bound=Message)


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

    A trace request whose faults are within some spans (protobuf: invalid UTF-8 in a string;
    either encoding: values nested past protobuf's depth limit, or any span JSON that does not
    map to a Span) keeps its other spans; the spans at fault come back as rejected, each with
    the reason."""
    data = decompress(body, encoding, limit)
    if signal != "traces":
        return decode_request(data, media, signal), []
    if media != PROTOBUF:
        return decode_json_traces(data)
    try:
        return decode_request(data, media), []
    except InvalidPayload as exc:
        if not any(fault in str(exc) for fault in SALVAGEABLE):
            raise
        salvaged = salvage(data)
        if salvaged is None:
            raise
        return salvaged


def decode_request(body: bytes, media: str, signal: str = "traces") -> Any:
    """Parse an Export<Signal>ServiceRequest; raises InvalidPayload when it cannot be parsed."""
    kind = SIGNALS[signal]
    if media == PROTOBUF:
        request = kind.request()
        try:
            request.ParseFromString(body)
        except (DecodeError, ValueError, RecursionError) as exc:
            raise InvalidPayload(f"body is not a valid OTLP protobuf request: {exc}") from exc
        return request
    try:
        return otlpjson.parse(_json_object(body, fast=True), kind.request, kind.id_paths)
    except otlpjson.Defer:
        return _from_dict(_ids_to_base64(_json_object(body), kind.id_paths), kind.request())


def decode_json_traces(body: bytes) -> tuple[ExportTraceServiceRequest, list[RejectedSpan]]:
    """Parse an OTLP/JSON trace request (the fast path, else json_format); when it does not
    map as a whole, the request without its spans is parsed, then each span alone, so only
    the spans at fault are rejected."""
    try:
        return otlpjson.parse(_json_object(body, fast=True), ExportTraceServiceRequest,
                              SIGNALS["traces"].id_paths), []
    except otlpjson.Defer:
        return _json_format_traces(body)


def decode_json_traces_serialised(body: bytes) -> tuple[ExportTraceServiceRequest,
                                                        list[RejectedSpan], bytes | None]:
    """`decode_json_traces`, and the request serialised when the fast path took the body
    (`otlpjson.encoded`: the bytes written from the JSON, the request parsed from them), for
    the compiled walk to read as it reads a protobuf body (`extract(..., raw)`)."""
    try:
        raw = otlpjson.encoded(_json_object(body, fast=True), ExportTraceServiceRequest,
                               SIGNALS["traces"].id_paths)
    except otlpjson.Defer:
        return (*_json_format_traces(body), None)
    return ExportTraceServiceRequest.FromString(raw), [], raw


def _json_format_traces(body: bytes) -> tuple[ExportTraceServiceRequest, list[RejectedSpan]]:
    """A body the fast path deferred, through json_format (spans at fault rejected alone)."""
    data = _ids_to_base64(_json_object(body), SIGNALS["traces"].id_paths)
    try:
        return _from_dict(data, ExportTraceServiceRequest()), []
    except InvalidPayload as whole:
        spans: list[list[list[Any]]] = []
        for rs in _list(data.get("resourceSpans")):
            spans.append([])
            for ss in _list(rs.get("scopeSpans") if isinstance(rs, dict) else None):
                spans[-1].append(_list(ss.get("spans")) if isinstance(ss, dict) else [])
                if isinstance(ss, dict):
                    ss["spans"] = []
        try:
            request = _from_dict(data, ExportTraceServiceRequest())
        except InvalidPayload:
            raise whole from None  # the fault is outside the spans
    rejected: list[RejectedSpan] = []
    for rs, rs_spans in zip(request.resource_spans, spans, strict=True):
        for ss, ss_spans in zip(rs.scope_spans, rs_spans, strict=True):
            for item in ss_spans:
                try:
                    ss.spans.append(_from_dict(item, Span()))
                except InvalidPayload as exc:
                    rejected.append(_json_rejected(item, str(exc)))
    return request, rejected


def _json_object(body: bytes, fast: bool = False) -> dict[str, Any]:
    """The body's JSON object as `json.loads` reads it; `fast`: as orjson reads it, for the
    fast path only (json when orjson refuses the text). The two readings differ only where
    orjson reads an integer past 64 bits as a float; the fast path defers on a float wherever
    it reads an integer and reads a double as float(the integer), so its answer from either
    reading is the same, and a deferred body is read again by json for json_format."""
    if fast:
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError:  # NaN, a lone surrogate, UTF-16, a BOM, ...: json says
            return _json_object(body)
        if not isinstance(data, dict):
            raise otlpjson.Defer  # json says why not
        return cast(dict[str, Any], data)
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise InvalidPayload(f"body is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidPayload("OTLP/JSON body must be an object")
    return data


def _from_dict(data: Any, message: MessageT) -> MessageT:
    what = "span" if isinstance(message, Span) else "OTLP/JSON request"
    try:
        json_format.ParseDict(data, message, ignore_unknown_fields=True)
    except (json_format.ParseError, DecodeError, ValueError, TypeError, RecursionError,
            OverflowError) as exc:  # OverflowError: an integer past a double
        reason = str(exc)
        if ("MaxDepth" in reason or "Message too deep" in reason
                or isinstance(exc, RecursionError)):
            reason = "values are nested deeper than the protobuf parser allows"
        raise InvalidPayload(f"body is not a valid {what}: {reason}"[:500]) from exc
    except SystemError as exc:  # upb on a field name that is a lone surrogate ("\udeba")
        reason = str(exc.__cause__ or exc)
        raise InvalidPayload(f"body is not a valid {what}: {reason}"[:500]) from exc
    return message


def _json_rejected(span: Any, reason: str) -> RejectedSpan:
    item = span if isinstance(span, dict) else {}

    def hex_id(key: str) -> str:
        try:
            return base64.b64decode(str(item.get(key, ""))).hex()
        except (binascii.Error, ValueError):
            return ""

    return RejectedSpan(hex_id("traceId"), hex_id("spanId"), str(item.get("name", ""))[:200],
                        reason)


def _hex_to_b64(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    return base64.b64encode(otlpjson.id_bytes(value)).decode()


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


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


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
