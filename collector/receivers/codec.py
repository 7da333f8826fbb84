"""Decoding OTLP request bodies (protobuf, JSON, gzip/deflate) and encoding answers."""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from collector.errors import InvalidPayload, PayloadTooLarge, UnsupportedMediaType
from collector.ingest import IngestResult
from collector.model import RejectedSpan
from collector.receivers.lenient import SALVAGEABLE, salvage

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
CHUNK = 256 * 1024
MessageT = TypeVar("MessageT", bound=Message)


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
    body: bytes, media: str, encoding: str | None, limit: int
) -> tuple[ExportTraceServiceRequest, list[RejectedSpan]]:
    """Decompress and parse a request body: (request, spans refused while decoding).

    A body whose faults are within some spans (protobuf: invalid UTF-8 in a string; either
    encoding: values nested past protobuf's depth limit, or any span JSON that does not map
    to a Span) keeps its other spans; the spans at fault come back as rejected, each with the
    reason."""
    data = decompress(body, encoding, limit)
    if media != PROTOBUF:
        return decode_json(data)
    try:
        return decode_request(data), []
    except InvalidPayload as exc:
        if not any(fault in str(exc) for fault in SALVAGEABLE):
            raise
        salvaged = salvage(data)
        if salvaged is None:
            raise
        return salvaged


def decode_request(body: bytes) -> ExportTraceServiceRequest:
    """Parse a protobuf ExportTraceServiceRequest; raises InvalidPayload when it cannot."""
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, ValueError, RecursionError) as exc:
        raise InvalidPayload(f"body is not a valid OTLP protobuf request: {exc}") from exc
    return request


def decode_json(body: bytes) -> tuple[ExportTraceServiceRequest, list[RejectedSpan]]:
    """Parse an OTLP/JSON request; when it does not map as a whole, the request without its
    spans is parsed, then each span alone, so only the spans at fault are rejected."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise InvalidPayload(f"body is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidPayload("OTLP/JSON body must be an object")
    data = _ids_to_base64(data)
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


def _from_dict(data: Any, message: MessageT) -> MessageT:
    what = "OTLP/JSON request" if isinstance(message, ExportTraceServiceRequest) else "span"
    try:
        json_format.ParseDict(data, message, ignore_unknown_fields=True)
    except (json_format.ParseError, DecodeError, ValueError, TypeError, RecursionError) as exc:
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
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        try:  # tolerate producers that send base64, as protobuf's JSON mapping does
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""  # left empty: the span is then rejected alone for its bad id
    return base64.b64encode(raw).decode()


def _ids_to_base64(data: dict[str, Any]) -> dict[str, Any]:
    """OTLP/JSON carries ids as hex; protobuf's JSON mapping expects base64."""
    for rs in _list(data.get("resourceSpans")):
        for ss in _list(rs.get("scopeSpans") if isinstance(rs, dict) else None):
            for span in _list(ss.get("spans") if isinstance(ss, dict) else None):
                if not isinstance(span, dict):
                    continue
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = _hex_to_b64(span[key])
                for link in _list(span.get("links")):
                    if isinstance(link, dict):
                        for key in ("traceId", "spanId"):
                            if key in link:
                                link[key] = _hex_to_b64(link[key])
    return data


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def encode(message: Message, media: str) -> bytes:
    """Serialise a response or status in the request's media type."""
    if media == JSON:
        return json.dumps(json_format.MessageToDict(message)).encode()
    return message.SerializeToString()


def response_for(result: IngestResult) -> ExportTraceServiceResponse:
    """The OTLP response: empty on full success, else partial_success."""
    response = ExportTraceServiceResponse()
    if result.rejected_spans or result.error_message:
        response.partial_success.rejected_spans = result.rejected_spans
        response.partial_success.error_message = result.error_message
    return response


def status_for(code: int, message: str) -> status_pb2.Status:
    """A google.rpc.Status body for an HTTP error answer."""
    return status_pb2.Status(code=code, message=message)
