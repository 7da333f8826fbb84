"""OTLP/HTTP receiver: POST /v1/traces, /v1/logs, /v1/metrics (protobuf or JSON, gzip or
deflate), all through the same admission, decoding, error mapping and ingest path."""

from __future__ import annotations

import logging
import math
from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.requests import ClientDisconnect

from tooltrail.collector.errors import (
    InvalidPayload,
    Overloaded,
    PayloadTooLarge,
    UnsupportedMediaType,
)
from tooltrail.collector.ingest import Ingest, admitted
from tooltrail.collector.receivers.codec import (
    PROTOBUF,
    SIGNALS,
    encode,
    media_type,
    response_for,
    status_for,
)

log = logging.getLogger(__name__)
TRANSPORT = "http"
COMPRESSION_ESTIMATE = 4  # a compressed body is admitted as this many times its size
GRPC_INVALID_ARGUMENT, GRPC_RESOURCE_EXHAUSTED, GRPC_UNAVAILABLE = 3, 8, 14


def error_response(exc: Exception, media: str) -> Response:
    """The one mapping from our errors to OTLP/HTTP answers."""
    if isinstance(exc, Overloaded):
        body = encode(status_for(GRPC_UNAVAILABLE, str(exc)), media)
        retry = str(max(1, math.ceil(exc.retry_after)))
        return Response(body, 503, media_type=media, headers={"Retry-After": retry})
    if isinstance(exc, UnsupportedMediaType):
        return Response(encode(status_for(GRPC_INVALID_ARGUMENT, str(exc)), media), 415,
                        media_type=media)
    if isinstance(exc, PayloadTooLarge):
        return Response(encode(status_for(GRPC_RESOURCE_EXHAUSTED, str(exc)), media), 413,
                        media_type=media)
    return Response(encode(status_for(GRPC_INVALID_ARGUMENT, str(exc)), media), 400,
                    media_type=media)


async def read_body(request: Request, limit: int) -> bytes:
    """The raw body, refusing (413) as soon as it grows past `limit`."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"request body of {declared} bytes exceeds {limit}")
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            raise PayloadTooLarge(f"request body exceeds {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def router(ingest: Ingest, max_request_bytes: int) -> APIRouter:
    """The /v1/{traces,logs,metrics} routes bound to one ingest path."""
    api = APIRouter()
    for signal in SIGNALS:
        api.add_api_route(f"/v1/{signal}", exporter(ingest, max_request_bytes, signal),
                          methods=["POST"], include_in_schema=False)
    return api


def exporter(ingest: Ingest, max_request_bytes: int, signal: str) -> Any:
    """The POST handler of one signal."""

    async def export(request: Request) -> Response:
        media = PROTOBUF
        try:
            media = media_type(request.headers.get("content-type"))
            encoding = request.headers.get("content-encoding")
            declared = request.headers.get("content-length")
            size = int(declared) if declared and declared.isdigit() else 0
            if size > max_request_bytes:
                raise PayloadTooLarge(f"request body of {size} bytes exceeds {max_request_bytes}")
            if encoding and encoding.strip().lower() not in ("", "identity"):
                size = min(size * COMPRESSION_ESTIMATE, max_request_bytes)
            with admitted(ingest, size) as ticket:  # decided before the body is read
                raw = await read_body(request, max_request_bytes)
                result = await ingest.export(raw, media, encoding, TRANSPORT, ticket, signal)
        except (InvalidPayload, Overloaded) as exc:
            ingest.reject_request(TRANSPORT, exc)
            return error_response(exc, media)
        except ClientDisconnect:
            ingest.metrics.requests.labels(TRANSPORT, "disconnected").inc()
            return Response(status_code=400)  # nobody is listening; nothing was admitted
        except Exception as exc:  # boundary: a clear answer, never a 500
            log.exception("unexpected failure while ingesting an HTTP request")
            ingest.metrics.loop_errors.labels("http_export").inc()
            failure = InvalidPayload(f"could not process the request: {type(exc).__name__}")
            ingest.reject_request(TRANSPORT, failure)
            return error_response(failure, media)
        return Response(encode(response_for(result, signal), media), 200, media_type=media)

    return export
